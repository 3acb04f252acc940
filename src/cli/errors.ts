/**
 * Errors the operator commands end with. main.ts prints `courier: <message>` on stderr and exits
 * with the code: 2 for bad input (nothing was sent), 1 when the API or the network failed (or a
 * deletion was not confirmed), 130 for Ctrl-C at a prompt.
 */
export class CliError extends Error {
  constructor(
    message: string,
    /** 130 when the operator ended it with Ctrl-C at a prompt, as a shell reports SIGINT. */
    readonly exitCode: 1 | 2 | 130,
    /** The API's `code`, when it refused the request. */
    readonly apiCode?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad arguments or input: exit 2, like commander's own usage errors. */
export const usageError = (message: string): CliError => new CliError(message, 2);

/** The API refused the request, or Courier could not be reached: exit 1. */
export const apiError = (message: string, apiCode?: string): CliError => new CliError(message, 1, apiCode);
