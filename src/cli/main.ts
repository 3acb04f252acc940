import { Command } from 'commander';

// Commands load their modules lazily: `courier worker` never pays for the HTTP server, nor the other way round.
const program = new Command()
  .name('courier')
  .description('Courier: self-hosted webhook delivery')
  .showHelpAfterError();

program
  .command('serve', { isDefault: true })
  .description('run the API and the delivery workers in one process')
  .action(async () => (await import('./commands/serve.ts')).serve());

program
  .command('worker')
  .description('run delivery workers only (scale out against one PostgreSQL)')
  .action(async () => (await import('./commands/worker.ts')).worker());

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(async () => (await import('./commands/migrate.ts')).migrate());

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`courier: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
