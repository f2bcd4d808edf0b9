import assert from "node:assert/strict";
import { test } from "node:test";
import { UpstreamAllowlist } from "./upstream-allow.ts";

test("a base URL is allowed on the prefix's origin, at or below its path; lookalikes are not", () => {
  const allow = new UpstreamAllowlist(["http://gpu-1:8000/v1", "https://api.example.com"]);
  assert.ok(allow.allows("http://gpu-1:8000/v1"));
  assert.ok(allow.allows("http://gpu-1:8000/v1/"));
  assert.ok(allow.allows("https://api.example.com/v1"));
  for (const url of [
    "http://gpu-1:8000/v10",
    "http://gpu-1:8000/v1/../admin",
    "http://gpu-1:80001/v1",
    "http://gpu-1:8000.evil.example/v1",
    "https://gpu-1:8000/v1",
    "http://169.254.169.254/latest/meta-data",
    "https://api.example.com.evil.example/v1",
    "file:///etc/passwd",
    "not a url",
  ])
    assert.ok(!allow.allows(url), url);
  const anyPort = new UpstreamAllowlist(["http://10.0.0.5:*"]);
  assert.ok(anyPort.allows("http://10.0.0.5:41234/v1") && anyPort.allows("http://10.0.0.5/v1"));
  assert.ok(!anyPort.allows("http://10.0.0.6:41234/v1") && !anyPort.allows("https://10.0.0.5:41234/v1"));
  assert.ok(!anyPort.allows("http://10.0.0.5.evil.example:41234/v1"));
  assert.match(allow.refusal("http://x/v1"), /"http:\/\/x\/v1" is not allowed.*http:\/\/gpu-1:8000\/v1/);
  assert.match(new UpstreamAllowlist([]).refusal("http://x/v1"), /none given/);
  assert.throws(
    () => new UpstreamAllowlist(["gpu-1:8000"]),
    /--upstream-allow: "gpu-1:8000" is not an http\(s\) URL/,
  );
});
