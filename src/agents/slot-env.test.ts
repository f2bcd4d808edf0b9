/**
 * What an agent sees of agentrl's environment: its slot's URLs and key, the user's own variables,
 * and none of agentrl's secrets (the upstream's key would let it call the model around the
 * gateway, unrecorded), in a worker slot (`--agent`) and a command slot (`--agent-cmd`) alike.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { commandSlot } from "./command-slot.ts";
import { type AgentSlot, type SlotEpisode, slotEnvironment } from "./slot.ts";
import { workerSlot } from "./worker-slot.ts";

const NAMES = ["AGENTRL_API_KEY", "AGENTRL_MCP_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MY_SEARCH_KEY"];
const episode: SlotEpisode = {
  task: { id: "t", question: "q" } as SlotEpisode["task"],
  episodeId: "e",
  baseURL: "http://127.0.0.1:1/episodes/e/v1",
  apiKey: "gateway-token",
  model: "m",
  timeoutMs: 20_000,
};
const slotEnv = slotEnvironment("http://127.0.0.1:1/slots/s0", "gateway-token", "m");

async function seen(slot: AgentSlot): Promise<Record<string, string | null>> {
  try {
    const outcome = await slot.run(episode);
    assert.ok("answer" in outcome, JSON.stringify(outcome));
    return JSON.parse(String(outcome.answer)) as Record<string, string | null>;
  } finally {
    await slot.close();
  }
}

test("agents get their slot's key and the user's variables, never agentrl's secrets", async (t) => {
  const saved = Object.fromEntries(NAMES.map((name) => [name, process.env[name]]));
  Object.assign(process.env, {
    AGENTRL_API_KEY: "upstream-secret",
    AGENTRL_MCP_TOKEN: "mcp-secret",
    OPENAI_API_KEY: "real-openai-key",
    MY_SEARCH_KEY: "users-own",
  });
  const dir = mkdtempSync(join(tmpdir(), "agentrl-slot-env-"));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const expected = {
    AGENTRL_API_KEY: null,
    AGENTRL_MCP_TOKEN: null,
    OPENAI_API_KEY: "gateway-token",
    OPENAI_BASE_URL: "http://127.0.0.1:1/slots/s0/v1",
    MY_SEARCH_KEY: "users-own",
  };
  const report = `Object.fromEntries(${JSON.stringify(NAMES)}.map((name) => [name, process.env[name] ?? null]))`;
  const module = join(dir, "agent.mjs");
  writeFileSync(module, `export default async () => JSON.stringify(${report});\n`);
  assert.deepEqual(
    await seen(
      workerSlot({ path: module, slotURL: "http://127.0.0.1:1/slots/s0", env: slotEnv, memoryMb: 256 }),
    ),
    expected,
  );
  const script = join(dir, "agent.cjs");
  writeFileSync(script, `console.log(JSON.stringify({ answer: JSON.stringify(${report}) }));\n`);
  const command = commandSlot({
    command: `${JSON.stringify(process.execPath)} ${JSON.stringify(script)}`,
    env: () => slotEnv,
  });
  assert.deepEqual(await seen(command), expected);
});
