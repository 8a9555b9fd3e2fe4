#!/usr/bin/env node
/** The `iqgate` command (package.json `bin`); src/command-line.ts has the commands. */
import { runCommandLine } from './command-line.js';

await runCommandLine(process.argv.slice(2));
