#!/usr/bin/env node
/** The `pathdb-codegen` command: `pathdb-codegen BUNDLE OUT_DIR [--client MODULE]` (see codegen.ts). */

import { join } from "node:path";

import { CodegenError, generate } from "./codegen.js";

const USAGE = "usage: pathdb-codegen BUNDLE OUT_DIR [--client MODULE]";

async function main(argv: string[]): Promise<number> {
  const positional: string[] = [];
  let client = "@pathdb/client";
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      console.log(USAGE);
      return 0;
    } else if (arg === "--client" && i + 1 < argv.length) {
      client = argv[++i]!;
    } else if (arg.startsWith("--client=")) {
      client = arg.slice("--client=".length);
    } else if (arg.startsWith("-")) {
      console.error(`pathdb-codegen: error: unknown option ${arg}\n${USAGE}`);
      return 2;
    } else {
      positional.push(arg);
    }
  }
  if (positional.length !== 2) {
    console.error(USAGE);
    return 2;
  }
  const [bundle, out] = positional as [string, string];
  try {
    const namespaces = await generate(bundle, out, client);
    const typed = namespaces.filter((n) => n.schema !== null).length;
    console.log(`pathdb-codegen: wrote ${join(out, "index.ts")} (${namespaces.length} namespaces, ${typed} with a value type)`);
    return 0;
  } catch (e) {
    if (e instanceof CodegenError) {
      console.error(`pathdb-codegen: error: ${e.message}`);
      return 2;
    }
    throw e;
  }
}

process.exitCode = await main(process.argv.slice(2));
