import assert from "node:assert/strict";
import { test } from "node:test";
import { cookieValue, TokenCheck } from "./access.ts";

test("the token is accepted from a bearer header or the cookie, nothing else", () => {
  const check = new TokenCheck("correct-horse");
  assert.ok(check.allows({ authorization: "Bearer correct-horse" }));
  assert.ok(check.allows({ cookie: "a=1; agentrl_ui_token=correct-horse; b=2" }));
  assert.ok(!check.allows({ authorization: "Bearer correct-hors" }));
  assert.ok(!check.allows({ cookie: "other=correct-horse" }));
  assert.ok(!check.allows({}));
  assert.equal(cookieValue("x=%20y", "x"), " y");
});
