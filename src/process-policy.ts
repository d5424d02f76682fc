/**
 * The process-wide failure policy, for errors no piece of work caught:
 * - An unhandled promise rejection is a bug confined to one piece of work (one request, one turn): it is
 *   logged with its stack and the server keeps serving, since exiting would cut every live stream.
 * - An uncaught exception leaves the process in an unknown state: it is logged, the server drains (at
 *   most PARLEY_SHUTDOWN_GRACE_MS) and exits with code 1, for the process supervisor (systemd,
 *   Kubernetes, ...) to restart it; start-up recovery then stores the turns it cut as `interrupted`.
 */
export function installFailurePolicy(logger: { error(obj: object, msg: string): void; fatal(obj: object, msg: string): void }, close: () => Promise<void>): void {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection (a bug): the server keeps serving');
  });
  let failing = false;
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception: draining, then exiting with code 1');
    if (failing) return;
    failing = true;
    const hard = setTimeout(() => process.exit(1), 30_000);
    hard.unref();
    close().finally(() => process.exit(1));
  });
}
