import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";

const serveModule = fileURLToPath(new URL("./serve.ts", import.meta.url));

/** Runs `agentrl serve <args>` in a child process (the command blocks until SIGTERM). */
function serve(args: string[]) {
  const script = `
    import { Command } from "commander";
    import { register } from ${JSON.stringify(serveModule)};
    const program = new Command().exitOverride();
    register(program);
    await program.parseAsync(${JSON.stringify(["node", "agentrl", "serve", ...args])});
  `;
  return spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
}

test("agentrl serve --policy expert: listens, answers an OpenAI client, stops on SIGTERM", async () => {
  const child = serve(["--policy", "expert", "--port", "0", "--token", "t0k", "--json"]);
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  try {
    const [line] = (await once(child.stdout, "data")) as [Buffer];
    const ready = JSON.parse(line.toString("utf8"));
    assert.equal(ready.model, "expert");
    assert.match(ready.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const client = new OpenAI({ baseURL: ready.url, apiKey: "t0k", maxRetries: 0 });
    const models = await client.models.list();
    assert.deepEqual(
      models.data.map((model) => model.id),
      ["expert"],
    );
    const noToken = await fetch(`${ready.url}/models`);
    assert.equal(noToken.status, 401);
  } finally {
    child.kill("SIGTERM");
  }
  const [code] = await once(child, "exit");
  assert.equal(code, 0, stderr);
});

test("agentrl serve refuses a public address without a token", async () => {
  const child = serve(["--policy", "expert", "--host", "0.0.0.0", "--port", "0"]);
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const [code] = await once(child, "exit");
  assert.notEqual(code, 0);
  assert.match(stderr, /refusing to listen on 0\.0\.0\.0 without a token/);
});
