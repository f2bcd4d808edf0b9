import assert from "node:assert/strict";
import { test } from "node:test";
import { cookieValue, hostName, isLoopback, TokenCheck } from "./access.ts";

test("host names of Host headers, and which are loopback", () => {
  assert.equal(hostName("[::1]:7860"), "::1");
  assert.equal(hostName("localhost:80"), "localhost");
  assert.equal(hostName("127.0.0.1"), "127.0.0.1");
  assert.ok(
    isLoopback("127.0.0.1") && isLoopback("::1") && isLoopback("localhost") && isLoopback("127.1.2.3"),
  );
  assert.ok(!isLoopback("0.0.0.0") && !isLoopback("evil.example") && !isLoopback("127.0.0.1.evil.example"));
});

test("the token is accepted from a bearer header or the cookie, nothing else", () => {
  const check = new TokenCheck("correct-horse");
  assert.ok(check.allows({ authorization: "Bearer correct-horse" }));
  assert.ok(check.allows({ cookie: "a=1; agentrl_ui_token=correct-horse; b=2" }));
  assert.ok(!check.allows({ authorization: "Bearer correct-hors" }));
  assert.ok(!check.allows({ cookie: "other=correct-horse" }));
  assert.ok(!check.allows({}));
  assert.equal(cookieValue("x=%20y", "x"), " y");
});
