import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapIfEmpty, CREDENTIALS_FILE } from './bootstrap/first-run.js';
import { loadConfig } from './config/config.js';
import { startParley } from './parley.js';
import { installFailurePolicy } from './process-policy.js';
import { runProcessGroup, tellPrimaryReady } from './process-group.js';

/**
 * CLI entry (`npm start`): reads the environment, starts the server, bootstraps an empty data dir
 * and drains on SIGTERM/SIGINT. Exit code 1 when start-up fails. With PARLEY_PROCESSES above 1 it runs
 * that many such processes on one port instead, and supervises them (src/process-group.ts).
 */
async function main(): Promise<void> {
  const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
  const config = loadConfig(process.env, projectRoot);
  if (config.cluster.processes > 1 && !config.cluster.groupChild) {
    // PARLEY_PROCESSES: this process only supervises N Parley processes on one port (src/process-group.ts).
    const code = await runProcessGroup({
      processes: config.cluster.processes, entry: fileURLToPath(import.meta.url), env: process.env, log: (line) => process.stdout.write(`${line}\n`),
    });
    process.exit(code);
  }
  // Ready (GET /readyz) only once the first-start bootstrap below has written its credentials file.
  const parley = await startParley(config, { deferReady: true });
  const { logger } = parley;
  installFailurePolicy(parley.logger, () => parley.close());

  // Registered before the (possibly slow) first-run bootstrap, so a SIGTERM always drains.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining');
    parley.close().then(() => process.exit(0), (err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGHUP reloads the TLS certificate and key (docs/operations.md "TLS"); without TLS it does nothing
  // (rather than Node's default for SIGHUP, which is to exit).
  process.on('SIGHUP', () => {
    parley.reloadTls().then((reloaded) => {
      if (!reloaded) logger.info('SIGHUP: TLS is off (PARLEY_TLS_CERT_FILE unset), nothing to reload');
    }, (err: unknown) => logger.error({ err }, 'SIGHUP: the TLS files did not load; the certificate in use stays'));
  });

  if (config.bootstrap) {
    const creds = await bootstrapIfEmpty({
      store: parley.store, knowledge: parley.knowledge, directory: parley.directory, logger, dataDir: config.dataDir, docsDir: config.docsDir,
    });
    if (creds) {
      const file = join(config.dataDir, CREDENTIALS_FILE);
      if (process.stdout.isTTY) {
        // Shown once, on the terminal only: stdout that is not a terminal (a pipe, a file, a container's
        // log collector) is a log, and the key and the password are secrets (API.md "Credentials").
        process.stdout.write([
          '',
          'Parley is ready. These credentials are shown once; they are also saved in',
          `  ${file} (mode 0600)`,
          '',
          `  API key:   ${creds.api_key}`,
          `  Agent:     ${creds.agent_id} (Parley Guide)`,
          `  Sign in:   ${creds.owner_email} / ${creds.owner_password} (owner of ${creds.organization_id})`,
          '',
          'Ask it something, streamed:',
          `  curl -N ${parley.url}/v1/agents/${creds.agent_id}/chat \\`,
          `    -H "Authorization: Bearer ${creds.api_key}" -H "Content-Type: application/json" \\`,
          `    -d '{"message": "How do I stream a reply?", "stream": true}'`,
          '',
        ].join('\n') + '\n');
      } else {
        process.stdout.write(
          `Parley is ready. Demo agent: ${creds.agent_id} (Parley Guide). Its API key and the sign-in of the owner `
          + `(${creds.owner_email}) are in ${file} (mode 0600); secrets are printed only to a terminal, never to logs.\n`,
        );
      }
    } else {
      logger.info({ credentials_file: join(config.dataDir, CREDENTIALS_FILE) }, 'existing data reused');
    }
  }
  parley.ready();
  tellPrimaryReady(parley.self.id, config.cluster.groupChild);

}

main().catch((err: unknown) => {
  process.stderr.write(`Parley failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
