import assert from "node:assert/strict";
import { test } from "node:test";
import { checkBind, HostPolicy, hostName, isLoopback } from "./boundary.ts";

test("host names of Host headers, and which are loopback", () => {
  assert.equal(hostName("[::1]:7860"), "::1");
  assert.equal(hostName("LocalHost:80"), "localhost");
  assert.equal(hostName("127.0.0.1"), "127.0.0.1");
  assert.equal(hostName("::1"), "::1");
  assert.equal(hostName("[::1]"), "::1");
  assert.ok(
    isLoopback("127.0.0.1") && isLoopback("::1") && isLoopback("localhost") && isLoopback("127.1.2.3"),
  );
  assert.ok(!isLoopback("0.0.0.0") && !isLoopback("evil.example") && !isLoopback("127.0.0.1.evil.example"));
});

test("Host and Origin: loopback, the bound address and --allow-host names pass; nothing else", () => {
  const loopback = new HostPolicy("127.0.0.1");
  assert.equal(loopback.refusal({ host: "127.0.0.1:8000" }), null);
  assert.equal(loopback.refusal({ host: "[::1]:8000", origin: "http://localhost:3000" }), null);
  assert.equal(loopback.refusal({ host: "attacker.example" })?.code, "host_not_allowed");
  assert.equal(loopback.refusal({})?.code, "host_not_allowed", "no Host at all");
  assert.equal(
    loopback.refusal({ host: "localhost", origin: "https://evil.example" })?.code,
    "origin_not_allowed",
  );
  assert.equal(loopback.refusal({ host: "localhost", origin: "null" })?.code, "origin_not_allowed");
  assert.match(loopback.refusal({ host: "attacker.example" })!.message, /--allow-host/);

  const bound = new HostPolicy("10.0.0.5", ["gpu-box.lan"]);
  assert.equal(bound.refusal({ host: "10.0.0.5:8300" }), null, "the bound address");
  assert.equal(bound.refusal({ host: "GPU-box.lan:8300", origin: "http://gpu-box.lan" }), null);
  assert.notEqual(bound.refusal({ host: "gpu-box.lan.evil.example" }), null);
  // A wildcard bind allows no name by itself.
  assert.notEqual(new HostPolicy("0.0.0.0").refusal({ host: "0.0.0.0:80" }), null);
});

test("the token rule of a bind: loopback free, another address needs a token or --insecure", () => {
  assert.equal(checkBind("x", "127.0.0.1", {}), null);
  assert.equal(checkBind("x", "::1", {}), null);
  assert.throws(
    () => checkBind("agentrl x", "0.0.0.0", {}),
    /^Error: refusing to listen on 0\.0\.0\.0 without a token: .* \(--token\) or allow it explicitly \(--insecure\)$/,
  );
  assert.match(checkBind("x", "0.0.0.0", { token: "t" }) ?? "", /plain HTTP/);
  assert.match(checkBind("x", "0.0.0.0", { insecure: true }) ?? "", /WITHOUT authentication/);
});
