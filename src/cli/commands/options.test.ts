import assert from "node:assert/strict";
import { test } from "node:test";
import { Command } from "commander";
import { commands } from "./index.ts";
import { addServerOptions, serverOptions } from "./options.ts";

test("--allow-host is repeatable and validated; the token falls back to the environment", () => {
  const command = addServerOptions(new Command("x").exitOverride(), {
    port: 9,
    tokenEnv: "AGENTRL_TEST_TOKEN_X",
  });
  command.parse(["--allow-host", "gpu-box.lan", "--allow-host", "[::1]", "--insecure"], { from: "user" });
  const listen = serverOptions(command.opts(), "AGENTRL_TEST_TOKEN_X");
  assert.deepEqual(listen, {
    host: "127.0.0.1",
    port: 9,
    allowRemote: true,
    allowHosts: ["gpu-box.lan", "[::1]"],
  });
  assert.throws(
    () =>
      serverOptions(
        { host: "127.0.0.1", port: "9", allowHost: ["http://evil.example/"] },
        "AGENTRL_TEST_TOKEN_X",
      ),
    /--allow-host must be a host name or address \(no scheme or path\), got "http:\/\/evil\.example\/"/,
  );
});

test("all six servers take the same --host, --port, --token, --insecure and --allow-host", () => {
  const program = new Command();
  for (const register of commands) register(program);
  const find = (path: string[]) =>
    path.reduce<Command>((command, name) => command.commands.find((sub) => sub.name() === name)!, program);
  for (const path of [
    ["serve"],
    ["gateway"],
    ["agent-server"],
    ["verify", "serve"],
    ["mcp", "serve"],
    ["ui"],
  ]) {
    const flags = find(path).options.map((option) => option.long);
    for (const flag of ["--host", "--port", "--token", "--insecure", "--allow-host"])
      assert.ok(flags.includes(flag), `${path.join(" ")} has ${flag}`);
  }
});
