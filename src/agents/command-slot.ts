/**
 * `--agent-cmd "<command>"` slots: an agent in any language, one process per episode. The command
 * runs through the shell in its own process group (spawned detached), with the task as one JSON
 * object on stdin (`id`, `question`, `metadata`: never the answer) and the slot environment
 * (slot.ts) pointing at the episode's own gateway URL. The answer is the last non-empty line of
 * stdout, or `answer` when that line is a JSON object `{"answer": …}`. stderr is kept with the
 * episode. At the timeout (or when the run stops) the whole group is killed, so a shell and the
 * children it started go together.
 *
 * Why a process per episode and not a long-lived JSON-lines process per slot: the contract is then
 * what any script already is (read stdin, print the answer), there is no protocol to get wrong,
 * nothing leaks from one episode into the next, and a timeout needs no cooperation; the price is
 * the interpreter's start per episode (~20-40 ms for python3, small beside an episode's calls).
 */
import { spawn } from "node:child_process";
import {
  type AgentSlot,
  agentFailure,
  agentProcessEnv,
  type SlotEpisode,
  type SlotOutcome,
  tail,
} from "./slot.ts";

export interface CommandSlotOptions {
  command: string;
  /** The episode's environment on top of this process's: built per episode from its URL. */
  env: (episode: SlotEpisode) => Record<string, string>;
}

/** What a command's stdout answered: the last non-empty line, unwrapped from `{"answer": …}`. */
export function commandAnswer(stdout: string): { answer: unknown } | null {
  const lines = stdout.split(/\r?\n/).filter((line) => line.trim() !== "");
  const last = lines.at(-1)?.trim();
  if (last === undefined) return null;
  if (last.startsWith("{")) {
    try {
      const parsed = JSON.parse(last) as unknown;
      if (typeof parsed === "object" && parsed !== null && "answer" in parsed)
        return { answer: (parsed as { answer: unknown }).answer };
    } catch {
      // Not JSON: the line itself is the answer.
    }
  }
  return { answer: last };
}

const MAX_STDOUT = 1 << 20;

export function commandSlot(options: CommandSlotOptions): AgentSlot {
  return {
    run(episode: SlotEpisode): Promise<SlotOutcome> {
      return new Promise((done) => {
        const child = spawn(options.command, {
          shell: true,
          detached: true,
          stdio: ["pipe", "pipe", "pipe"],
          env: agentProcessEnv(options.env(episode)),
        });
        let stdout = "";
        let stderr = "";
        let ended: "timeout" | "stopped" | null = null;
        child.stdout.on("data", (chunk: Buffer) => {
          stdout = tail(stdout + chunk.toString("utf8"), MAX_STDOUT);
        });
        child.stderr.on("data", (chunk: Buffer) => {
          stderr = tail(stderr + chunk.toString("utf8"), 65_536);
        });
        const killGroup = (why: "timeout" | "stopped") => {
          ended ??= why;
          try {
            if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
          } catch {
            // The group is already gone.
          }
        };
        const timer = setTimeout(() => killGroup("timeout"), episode.timeoutMs);
        const onStop = () => killGroup("stopped");
        if (episode.signal?.aborted) onStop();
        episode.signal?.addEventListener("abort", onStop, { once: true });
        // An agent that never reads its stdin (or exits first) must not fail the write.
        child.stdin.on("error", () => {});
        const { id, question, metadata } = episode.task;
        child.stdin.end(`${JSON.stringify({ id, question, metadata: metadata ?? {} })}\n`);
        const finish = (outcome: SlotOutcome) => {
          clearTimeout(timer);
          episode.signal?.removeEventListener("abort", onStop);
          done({ ...outcome, ...(stderr ? { stderr } : {}) });
        };
        child.on("error", (error) =>
          finish({ failure: agentFailure("agent-crashed", `the command could not run: ${error.message}`) }),
        );
        child.on("close", (code, signal) => {
          if (ended === "timeout")
            return finish({
              failure: agentFailure("agent-timeout", `timeout: the agent ran past ${episode.timeoutMs} ms`),
            });
          if (ended === "stopped")
            return finish({ failure: agentFailure("agent-stopped", "the run stopped") });
          if (code !== 0)
            return finish({
              failure: agentFailure(
                "agent-exited",
                `the command exited with ${code === null ? `signal ${signal}` : `code ${code}`}`,
              ),
            });
          const answer = commandAnswer(stdout);
          finish(
            answer ?? { failure: agentFailure("agent-no-answer", "the command printed no answer on stdout") },
          );
        });
      });
    },
    close: async () => {},
  };
}
