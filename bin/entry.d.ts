/** Written by scripts/build.ts once dist/ is complete, relative to the project root. */
export declare const BUILD_STAMP: string;
/** The CLI entry to run: dist/cli/main.js while its build is current, else src/cli/main.ts. */
export declare function cliEntry(root: string): { compiled: boolean; path: string };
