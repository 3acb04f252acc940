#!/usr/bin/env node
// Runs the compiled CLI when dist/ is up to date with src/ (see entry.js), else the TypeScript
// sources through tsx's loader, so no build step is needed.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cliEntry } from './entry.js';

const entry = cliEntry(fileURLToPath(new URL('..', import.meta.url)));
if (!entry.compiled) (await import('tsx/esm/api')).register();
await import(pathToFileURL(entry.path).href);
