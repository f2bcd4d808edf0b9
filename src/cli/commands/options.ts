/**
 * Validation of command-line values: a bad value fails fast with the option named and the valid
 * values listed, before any work starts.
 */
import { type Command, InvalidArgumentError, Option } from "commander";

export function parseNumber(
  name: string,
  raw: string | number,
  limits: { integer?: boolean; min?: number; max?: number } = {},
): number {
  const value = typeof raw === "number" ? raw : Number(raw);
  const kind = limits.integer ? "an integer" : "a number";
  const range =
    limits.min !== undefined && limits.max !== undefined
      ? ` in [${limits.min}, ${limits.max}]`
      : limits.min !== undefined
        ? ` >= ${limits.min}`
        : limits.max !== undefined
          ? ` <= ${limits.max}`
          : "";
  const ok =
    raw !== "" &&
    Number.isFinite(value) &&
    (!limits.integer || Number.isInteger(value)) &&
    (limits.min === undefined || value >= limits.min) &&
    (limits.max === undefined || value <= limits.max);
  if (!ok) throw new Error(`${name} must be ${kind}${range}, got "${raw}"`);
  return value;
}

export function parseChoice<T extends string>(name: string, raw: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(raw)) {
    throw new Error(`${name} must be one of ${choices.join(", ")}; got "${raw}"`);
  }
  return raw as T;
}

/** Commander parser for a numeric option; the error names the option and the valid range. */
export function numberOption(name: string, limits: { integer?: boolean; min?: number; max?: number }) {
  return (text: string): number => {
    try {
      return parseNumber(name, text, limits);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

/** `--noise` and `--noise-seed` of the commands that call the world's tools directly. */
export function addToolNoiseOptions(command: Command): Command {
  return command
    .option(
      "--noise <rate>",
      "total injected failure rate in [0, 1], split evenly over error, empty, timeout and corrupted",
      numberOption("--noise", { min: 0, max: 1 }),
      0,
    )
    .option(
      "--noise-seed <n>",
      "seed of the noise draws (default: the world seed)",
      numberOption("--noise-seed", { integer: true, min: 0 }),
    );
}

/** Commander collector of a repeatable option. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * `--host`, `--port`, `--token`, `--insecure` and `--allow-host` of a command that serves HTTP
 * (src/http/boundary.ts): loopback by default, another address only with a token (or `--insecure`);
 * the token defaults to `tokenEnv`; requests must name a loopback host, the bound address or an
 * `--allow-host` one.
 */
export function addServerOptions(
  command: Command,
  defaults: { host?: string; port: number; tokenEnv: string },
): Command {
  return command
    .option(
      "--host <host>",
      "address to bind (another than loopback needs --token or --insecure)",
      defaults.host ?? "127.0.0.1",
    )
    .option("--port <port>", "port (0 picks a free one)", String(defaults.port))
    .option("--token <token>", `require Authorization: Bearer <token> (default: $${defaults.tokenEnv})`)
    .option("--insecure", "allow binding a non-loopback address without a token")
    .option(
      "--allow-host <host>",
      "also answer requests whose Host (and Origin) names this host (repeatable; default: loopback names and the bound address)",
      collect,
    );
}

/** The listening options `addServerOptions` added, validated, with the token from `tokenEnv` when not given. */
export function serverOptions(
  options: { host: string; port: string | number; token?: string; insecure?: boolean; allowHost?: string[] },
  tokenEnv: string,
): { host: string; port: number; token?: string; allowRemote: boolean; allowHosts: string[] } {
  const token = options.token ?? process.env[tokenEnv] ?? undefined;
  const allowHosts = options.allowHost ?? [];
  for (const host of allowHosts) {
    if (!/^[A-Za-z0-9.:[\]-]+$/.test(host))
      throw new Error(`--allow-host must be a host name or address (no scheme or path), got "${host}"`);
  }
  return {
    host: options.host,
    port: parseNumber("--port", options.port, { integer: true, min: 0, max: 65535 }),
    ...(token ? { token } : {}),
    allowRemote: Boolean(options.insecure),
    allowHosts,
  };
}

/**
 * Keeps a renamed flag working for one release: `alias` (the old name, hidden from `--help`)
 * sets `target` (the new one, already declared on `command`, whose parser checks the value) and
 * prints a deprecation note. Giving both is an error.
 */
export function addRenamedFlag(command: Command, alias: string, target: string): Command {
  const targetOption = command.options.find((option) => option.long === target);
  if (!targetOption) throw new Error(`addRenamedFlag: ${command.name()} has no ${target}`);
  const aliasOption = new Option(`${alias} <value>`, `renamed ${target}`).hideHelp();
  command.addOption(aliasOption);
  return command.hook("preAction", (self) => {
    const value = self.getOptionValue(aliasOption.attributeName()) as string | undefined;
    if (value === undefined) return;
    const key = targetOption.attributeName();
    if (self.getOptionValueSource(key) === "cli") {
      throw new Error(`${alias} is the old name of ${target}: give ${target} only`);
    }
    console.error(`agentrl ${self.name()}: ${alias} is now ${target}; the old name goes in the next release`);
    const parsed = targetOption.parseArg ? targetOption.parseArg(value, undefined) : value;
    self.setOptionValueWithSource(key, parsed, "cli");
  });
}
