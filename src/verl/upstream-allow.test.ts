import assert from "node:assert/strict";
import { test } from "node:test";
import { localUpstreamPrefixes, UpstreamAllowlist } from "./upstream-allow.ts";

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

test("an IPv6 host in brackets takes a port of * too; it allows that address only", () => {
  const allow = new UpstreamAllowlist(["http://[fd00::5]:*", "http://[::1]:8000/v1"]);
  assert.ok(allow.allows("http://[fd00::5]:41234/v1") && allow.allows("http://[fd00:0::5]:1/v1"));
  assert.ok(allow.allows("http://[::1]:8000/v1"));
  assert.ok(!allow.allows("http://[fd00::6]:41234/v1") && !allow.allows("http://[::1]:8001/v1"));
  assert.throws(() => new UpstreamAllowlist(["http://fd00::5:*"]), /an IPv6 address in brackets/);
});

test("this host's addresses: every interface's, IPv6 bracketed, link-local left out", () => {
  const info = (address: string, family: "IPv4" | "IPv6") => ({
    address,
    family,
    internal: false,
    mac: "00:00:00:00:00:00",
    cidr: null,
    netmask: "",
    scopeid: 0,
  });
  const host = () => ({
    lo: [info("127.0.0.1", "IPv4"), info("::1", "IPv6")],
    eth0: [info("10.0.0.7", "IPv4"), info("fe80::1", "IPv6"), info("fd00::5", "IPv6")],
  });
  assert.deepEqual(localUpstreamPrefixes(host as never), [
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "http://10.0.0.7:*",
    "http://[fd00::5]:*",
  ]);
});
