/**
 * `start_agentrl.sh` on a host whose Ray node address is neither loopback nor the first address of
 * `hostname -i`: a test double of that host, where a fake `hostname` on PATH answers an IPv6
 * address first and Debian's 127.0.1.1 after it, and the network interfaces hold Ray's node IP on a
 * second card. The agent-server the script starts (its arguments, recorded by a fake `agentrl`)
 * accepts its allow-list, allows the rollout servers on Ray's node address, IPv4 or IPv6, and still
 * refuses every other host; an episode against a fake vLLM listening on Ray's node address runs.
 * Nothing is sent anywhere but loopback: Ray's node address of the episode is a loopback alias
 * (127.0.0.2), the others are only checked, and the refused request makes no call.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { NetworkInterfaceInfo } from "node:os";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import { startAgentServer } from "./agent-server.ts";
import { verlInit } from "./init.ts";
import { type FakeVllmSpec, startFakeVllm } from "./testing.ts";
import { rolloutAllowlist } from "./upstream-allow.ts";

const run = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "agentrl-start-script-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Ray's node IP: the address of the card the route to the outside leaves by. */
const RAY_NODE_IP = "10.0.0.7";
let jobs = 0;

function address(address: string, family: "IPv4" | "IPv6", internal = false): NetworkInterfaceInfo {
  const base = { address, internal, mac: "00:00:00:00:00:00", cidr: null };
  return family === "IPv4"
    ? { ...base, family, netmask: "255.255.255.0" }
    : { ...base, family, netmask: "ffff:ffff:ffff:ffff::", scopeid: address.startsWith("fe80") ? 2 : 0 };
}

/** The host double's network interfaces (what `os.networkInterfaces()` would answer there). */
const host = () => ({
  lo: [address("127.0.0.1", "IPv4", true), address("::1", "IPv6", true)],
  eth0: [address("fd00::5", "IPv6"), address("fe80::1", "IPv6")],
  eth1: [address(RAY_NODE_IP, "IPv4")],
});

/** Runs the job's start_agentrl.sh on the host double; returns the agent-server's arguments. */
async function startScriptArgs(env: Record<string, string> = {}): Promise<string[]> {
  const out = join(root, `job-${jobs++}`);
  verlInit({
    train: [{ id: "a", question: "Who founded Mipa?", answer: "Ona", family: "lookup" }],
    val: [{ id: "b", question: "When was Ona born?", answer: "1901", family: "lookup" }],
    verifier: "world",
    tasksSource: "world",
    model: "m",
    out,
    verlVersion: "0.7",
    mode: "agent",
  });
  const bin = join(out, "fake-bin");
  mkdirSync(bin);
  const record = join(out, "agent-server-args");
  const fake = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  // `hostname -i` answers an IPv6 address first, then Debian's 127.0.1.1: neither is Ray's node IP.
  fake("hostname", 'echo "fd00::5 127.0.1.1"');
  // `$AGENTRL agent-server …`: the arguments after the command's name.
  fake("agentrl", `shift; printf '%s\\n' "$@" > "${record}"`);
  await run("bash", [join(out, "start_agentrl.sh")], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, AGENTRL: join(bin, "agentrl"), ...env },
  });
  return readFileSync(record, "utf8").trim().split("\n");
}

/** The agent-server options its arguments name (the allow-list's part). */
function allowOptions(args: readonly string[]) {
  const upstreamAllow = args.flatMap((arg, i) => (arg === "--upstream-allow" ? [args[i + 1]] : []));
  return { upstreamAllow, upstreamAllowLocal: args.includes("--upstream-allow-local") };
}

test("the agent-server started by start_agentrl.sh allows Ray's node address, IPv4 or IPv6, and nothing else", async () => {
  const allow = rolloutAllowlist(allowOptions(await startScriptArgs()), host);
  for (const url of [
    `http://${RAY_NODE_IP}:41234/v1`,
    "http://[fd00::5]:41234/v1",
    "http://127.0.0.1:8000/v1",
    "http://[::1]:8000/v1",
  ])
    assert.ok(allow.allows(url), url);
  for (const url of [
    "http://10.0.0.8:41234/v1",
    "http://169.254.169.254/latest/meta-data",
    "http://[fd00::6]:41234/v1",
    "http://[fe80::1]:41234/v1",
  ])
    assert.ok(!allow.allows(url), url);
  // A multi-node job names the other nodes' rollout servers too.
  const multi = rolloutAllowlist(
    allowOptions(await startScriptArgs({ AGENTRL_ROLLOUT_ALLOW: "http://10.0.0.9:* http://[fd00::9]:*" })),
    host,
  );
  assert.ok(multi.allows("http://10.0.0.9:1/v1") && multi.allows("http://[fd00::9]:1/v1"));
  assert.ok(multi.allows(`http://${RAY_NODE_IP}:1/v1`), "and still this node's");
});

test("verl init's job on that host: a sample whose rollout server listens on Ray's node address runs; another host's is refused", async (t) => {
  // Ray's node IP here is 127.0.0.2, on a card of its own: a loopback alias, so the test's traffic
  // stays on loopback, and like 10.0.0.7 neither 127.0.0.1 nor the first address of `hostname -i`.
  const rayNode = "127.0.0.2";
  const onRayNode = () => ({ ...host(), eth1: [address(rayNode, "IPv4")] });
  const dir = join(root, "vllm");
  mkdirSync(dir);
  const spec = join(dir, "spec.json");
  const fake: FakeVllmSpec = { model: "m", version: "0.11.0", answers: { q: "a" }, host: rayNode };
  writeFileSync(spec, JSON.stringify(fake));
  const vllm = await startFakeVllm(spec);
  t.after(() => vllm.close());
  const server = await startAgentServer({
    port: 0,
    ...allowOptions(await startScriptArgs()),
    interfaces: onRayNode,
    verifier: "em",
    log: () => {},
  });
  try {
    const episode = (baseURL: string) =>
      fetch(`${server.url}/v1/episodes`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          task: { id: "t", question: "q", answer: "a", family: "lookup" },
          upstream: { base_url: baseURL },
        }),
      });
    assert.equal(vllm.address.split(":")[0], rayNode);
    const ran = await episode(`http://${vllm.address}/v1`);
    const answer = (await ran.json()) as { prompt_ids: number[]; response_ids: number[]; failure: unknown };
    assert.equal(ran.status, 200);
    assert.equal(answer.failure, null, JSON.stringify(answer.failure));
    assert.ok(
      answer.prompt_ids.length > 0 && answer.response_ids.length > 0,
      "the rollout server's exact ids",
    );
    const refused = await episode("http://10.0.0.8:41234/v1");
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /10\.0\.0\.8:41234.*is not allowed/);
  } finally {
    await server.close();
  }
});
