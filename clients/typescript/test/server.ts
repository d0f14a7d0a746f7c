/** Starts `pathdb serve` ($PATHDB_BIN, default target/debug/pathdb) on a free loopback port. */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const TOKEN = "secret";
export const READ_TOKEN = "ro";
export const ADMIN_TOKEN = "adm";
// dist/test/server.js -> the repository root
export const REPO = resolve(fileURLToPath(import.meta.url), "../../../../..");

export interface Server {
  url: string;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const binary = process.env.PATHDB_BIN ?? join(REPO, "target", "debug", "pathdb");
  if (!existsSync(binary)) {
    throw new Error(`no pathdb binary at ${binary}: cargo build -p pathdb-cli, or set PATHDB_BIN`);
  }
  const work = mkdtempSync(join(tmpdir(), "pathdb-ts-"));
  const child: ChildProcess = spawn(
    binary,
    ["--db", join(work, "test.pathdb"), "serve", "--addr", "127.0.0.1:0"],
    {
      env: { ...process.env, PATHDB_TOKENS: `${TOKEN}=read-write,${READ_TOKEN}=read,${ADMIN_TOKEN}=admin`, RUST_LOG: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error("pathdb serve printed no 'listening on' line in 30 s")), 30_000);
    child.once("exit", (code) => reject(new Error(`pathdb serve exited with ${code}`)));
    lines.once("line", (line) => {
      clearTimeout(timer);
      if (line.startsWith("listening on ")) resolveUrl(line.slice("listening on ".length));
      else reject(new Error(`pathdb serve did not start: ${line}`));
    });
  });
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      rmSync(work, { recursive: true, force: true });
    },
  };
}
