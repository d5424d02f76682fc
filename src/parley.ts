import { AccessTokens } from './auth/access-tokens.js';
import { LoginThrottle } from './auth/login-throttle.js';
import { PasswordHasher } from './auth/passwords.js';
import type { Config } from './config/config.js';
import { IngestionPool } from './knowledge/ingestion-pool.js';
import { KnowledgeService } from './knowledge/knowledge-service.js';
import { embedderFromConfig } from './knowledge/chunk-embedder.js';
import { createKnowledgeSearch } from './knowledge/hybrid-search.js';
import { createLogger, type Logger } from './log/logger.js';
import { Metrics } from './metrics/metrics.js';
import { createModelRegistry } from './models/registry.js';
import { createWorkerTokenCounter } from './models/token-counter.js';
import { AgentDirectory } from './runtime/agent-directory.js';
import { ChatService } from './runtime/chat-service.js';
import { EventBus } from './events/event-bus.js';
import { Outbox, type StoredEvent } from './events/outbox.js';
import { messageCreated } from './runtime/webhooks/event-data.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../actors/webhook-endpoint/retry.rules.js';
import { WebhookDispatcher } from './runtime/webhooks/dispatcher.js';
import { UsageService } from './runtime/services/usage.js';
import { WebhookService } from './runtime/services/webhooks.js';
import { WebhookSender } from './webhooks/sender.js';
import { readFileSync } from 'node:fs';
import { LiveHub } from './runtime/live/live-hub.js';
import { AccessCache } from './auth/access-cache.js';
import { FeedFollower } from './runtime/feed-follower.js';
import { followAccessChanges } from './runtime/access-changes.js';
import { followRemoteEvents } from './runtime/placement/remote-events.js';
import { PublicService } from './runtime/services/public.js';
import { AccessService } from './runtime/services/access.js';
import { AgentService } from './runtime/services/agents.js';
import { createGuardedAgent } from './net/outbound-guard.js';
import { ApiKeyService } from './runtime/services/api-keys.js';
import { DirectoryService } from './runtime/services/directory.js';
import { MemberService } from './runtime/services/members.js';
import { SessionService } from './runtime/services/sessions.js';
import { ConversationService } from './runtime/services/conversations.js';
import { HealthService } from './runtime/services/health.js';
import { OrganizationService } from './runtime/services/organization.js';
import { RetentionSweep } from './runtime/retention/retention-sweep.js';
import { KnowledgeBaseService } from './runtime/services/knowledge-bases.js';
import type { Store } from './store/ports.js';
import { withApiKeyCache } from './store/cached-api-keys.js';
import { createStore } from './store/create-store.js';
import { exposedPaths, fixModesCommand } from './store/sqlite/data-dir.js';
import { createDispatcher } from './transport/http/dispatch.js';
import { Router } from './transport/http/router.js';
import { apiRoutes } from './transport/http/routes/index.js';
import { socketRoutes } from './transport/ws/routes.js';
import { ChannelFrames } from './transport/ws/server-frames.js';
import type { Services } from './transport/http/services.js';
import { SseHub } from './transport/sse/sse-writer.js';
import { loadDashboard, loadWidget } from './transport/static/static-site.js';
import { loadWidgetPreview } from './transport/static/widget-preview.js';
import { startUwsServer } from './transport/uws/server.js';
import { ClientAddresses } from './net/trusted-proxies.js';
import { internalRoutes } from './transport/http/routes/internal.js';
import { newId } from './ids/ids.js';
import { PeerClient } from './cluster/peer-client.js';
import { ProcessRegistry } from './cluster/process-registry.js';
import { verifyInternal, INTERNAL_HEADER } from './cluster/internal-auth.js';
import { newClusterSecret } from './store/sqlite/leases.js';
import type { LeaseOwner } from './store/records.js';
import { INTERRUPTED } from './runtime/chat-service.js';

/** The error stored on a turn cut short by a crash (API.md "Chat": a `failed` agent message, code `interrupted`). */
export { INTERRUPTED };

/** A running Parley instance. */
export interface Parley {
  /** `http://127.0.0.1:<port>` (or the configured host; `https://` with TLS). */
  url: string;
  port: number;
  /** What route handlers call. */
  services: Services;
  /** The store and the ingestion service, for the composition root's own work (bootstrap, tests). */
  store: Store;
  knowledge: KnowledgeService;
  /** Organizations, persons and passwords (bootstrap, CLI-like work in tests). */
  directory: DirectoryService;
  /** Access tokens (tests sign and verify with them). */
  tokens: AccessTokens;
  /** The domain event bus (webhooks will subscribe; tests watch it). */
  events: EventBus;
  /** Open WebSockets. */
  readonly sockets: number;
  /** The webhook dispatcher (tests read an endpoint actor's state). */
  webhooks: WebhookDispatcher;
  /** This process in the store (its id and the address its neighbours reach it at). */
  readonly self: LeaseOwner;
  logger: Logger;
  /**
   * Marks this process ready (GET /readyz 200): for a caller that started it with `deferReady` and has
   * finished its own start-up work (the first-start bootstrap and its credentials file).
   */
  ready(): void;
  /**
   * Reads PARLEY_TLS_CERT_FILE and PARLEY_TLS_KEY_FILE again (SIGHUP): new connections get the new
   * certificate, open ones keep theirs (UwsServer.reloadTls). Resolves false without TLS. Throws when the
   * files do not load, keeping the certificate in use.
   */
  reloadTls(): Promise<boolean>;
  /**
   * Graceful stop (SIGTERM): stop accepting connections, refuse new turns, let running turns finish
   * up to `shutdownGraceMs`, then close streams, the worker pool and the store.
   */
  close(): Promise<void>;
}

/**
 * Composition root: config -> store -> runtime -> transport (DESIGN.md). Starts listening before it
 * resolves. Throws when the port cannot be bound or uWebSockets.js has no native build.
 */
export async function startParley(config: Readonly<Config>, opts: { logger?: Logger; store?: Store; deferReady?: boolean } = {}): Promise<Parley> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  // API-key lookups (one per API-key request) are cached; revocations through this instance apply at once.
  const store = withApiKeyCache(opts.store ?? await createStore(config, { user: 'server', logger }));
  if (opts.store === undefined && config.mongodb === undefined) warnIfDataExposed(config.dataDir, logger);
  const metrics = new Metrics();
  const bus = new EventBus((err, event) => logger.error({ err, event: event.type }, 'event listener failed'));
  const tokens = createWorkerTokenCounter();
  const models = createModelRegistry({
    openai: config.openai, modelTimeoutMs: config.modelTimeoutMs, builtinWordDelayMs: config.builtinWordDelayMs, tokens, logger,
  });
  // Optional embeddings (PARLEY_EMBEDDINGS_MODEL): vectors at ingestion, and hybrid search per turn.
  const embeddings = embedderFromConfig(config);
  const embedder = embeddings?.embedder;
  const search = createKnowledgeSearch({ knowledge: store.knowledge, embedder, logger });
  const pool = new IngestionPool({
    processes: config.ingestWorkers, timeoutMs: config.ingestTimeoutMs, memoryMb: config.ingestMemoryMb, nice: config.ingestNice,
    warmUpRounds: config.ingestWarmUpRounds, maxExpandedBytes: config.ingestMaxExpandedBytes, onError: (err) => logger.error({ err }, 'ingestion parser error'),
  });
  metrics.watchIngestion(() => ({ threads: pool.processes, warmedUp: pool.warmedUp }));
  if (store.commits !== undefined) metrics.watchCommits(store.commits.bind(store));
  if (store.pool !== undefined) metrics.watchPool(store.pool.bind(store));
  const outbox = new Outbox();
  // Ready (GET /readyz) once start-up recovery is done, and the first-start bootstrap when the caller runs one;
  // `draining` from the first moment of close(), before anything it awaits.
  let started = false;
  let draining = false;
  // This process among those serving the store (DESIGN.md "Several processes"); its address is known
  // once the server listens (port 0 in tests), before the first request is served.
  const self: LeaseOwner = { id: newId('proc'), url: config.cluster.advertiseUrl ?? '' };
  const knowledge = new KnowledgeService(store, pool, bus, logger, outbox, embedder, { maxProcessingPerOrg: config.ingestMaxProcessingPerOrg, owner: self.id });
  const clusterSecret = await store.processes.clusterSecret(newClusterSecret());
  // A child of PARLEY_PROCESSES answers /metrics on the shared port for the whole group, each series with
  // its process's index; a process on its own port answers for itself (its scraper tells instances apart).
  if (config.cluster.groupChild) metrics.labelProcess(String(config.cluster.index ?? 0));
  const peers = new PeerClient({ processId: self.id, secret: clusterSecret });
  const registry = new ProcessRegistry(store.processes, self, {
    heartbeatMs: Math.max(100, Math.min(2000, Math.floor(config.cluster.leaseMs / 3))), deadAfterMs: config.cluster.leaseMs, logger,
  });
  const agentDirectory = new AgentDirectory(store);
  const live = new LiveHub();
  // HTTP tools reach customers' endpoints only through the outbound guard (public addresses unless allowed).
  const toolDispatcher = createGuardedAgent({ allowPrivate: config.tools.allowPrivate, connectTimeoutMs: 10_000, connections: 64 });
  const chat = new ChatService({
    agents: agentDirectory, live, httpTools: { dispatcher: toolDispatcher, secrets: config.tools.secrets },
    store, models, tokens, bus, logger,
    maxQueuedTurns: config.maxQueuedTurns, idleUnloadMs: config.idleUnloadMs, maxToolSteps: config.maxToolSteps,
    retrievalK: config.retrievalK, search, turnReplayMs: config.turnReplayMs, replayBudgetBytes: config.turnReplayBytes, admission: config.admission, lag: metrics.loop,
    onTurnEnd: (turn, outcome) => {
      metrics.turns.inc({ outcome });
      if (outcome !== 'withdrawn') metrics.observeTurn(turn);
    },
    outbox,
    cluster: { self, leaseMs: config.cluster.leaseMs, registry, peers },
  });
  metrics.watchReplay(() => chat.turns.retained);
  const sender = new WebhookSender({ allowPrivate: config.webhooks.allowPrivate, timeoutMs: config.webhooks.timeoutMs });
  const dispatcher = new WebhookDispatcher({
    store, logger, sender, outbox, retryScheduleMs: config.webhooks.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
    maxInFlight: config.webhooks.maxInFlight, disableAfterMs: config.webhooks.disableAfterMs,
    leaseMs: config.webhooks.timeoutMs * 3, sweepIntervalMs: config.webhooks.sweepMs, userAgent: `Parley/${PARLEY_VERSION}`,
    owner: self.id,
  });
  // A neighbour found dead: its conversations and its webhook deliveries are taken over now.
  registry.onDead(async (id) => {
    await knowledge.takeOverFrom(id).catch((err: unknown) => logger.error({ err, process_id: id }, 'could not take over a gone process\'s documents'));
    await chat.placement.takeOverFrom(id).catch((err: unknown) => logger.error({ err, process_id: id }, 'could not take over a gone process\'s conversations'));
    await dispatcher.ownerGone(id).catch((err: unknown) => logger.error({ err, process_id: id }, 'could not take over a gone process\'s webhook deliveries'));
  });

  const accessTokens = new AccessTokens(store.signingKeys);
  await accessTokens.init();
  const passwords = new PasswordHasher({ concurrency: config.auth.passwordHashConcurrency, maxWaiting: 1000 });
  await passwords.prepare();
  const throttle = new LoginThrottle({
    perAccount: config.auth.loginFailuresPerAccount, perAddress: config.auth.loginFailuresPerAddress,
    accountCeiling: config.auth.loginAccountCeiling, windowMs: config.auth.loginWindowMs, processes: () => registry.size,
  });
  // Access checks of persons are cached; the store feed drops what a change made stale, on every process.
  const accessCache = new AccessCache(store.memberships, store.refreshTokens);
  const access = new AccessService(store, accessTokens, accessCache);
  const feed = new FeedFollower(store.feed, { logger, pollMs: config.feedPollMs });
  followRemoteEvents(feed, { selfId: self.id, live, store, remote: chat.remote!, urlOf: (id) => registry.urlOf(id), logger });
  // A conversation erased by another process: its sockets and mirrors here go too.
  feed.onEntry((e) => { if (e.kind === 'erased' && e.origin !== self.id) chat.conversationErased(e.conversation_id); });
  const stopAccessChanges = followAccessChanges(feed, {
    store, access: accessCache, apiKeys: store.apiKeys, agents: agentDirectory, live, logger,
    webhooksChanged: (orgId) => { dispatcher.reloadOrg(orgId).catch((err: unknown) => logger.error({ err, org_id: orgId }, 'could not reload webhook endpoints')); },
  });
  const services: Services = {
    config, logger, access, chat,
    sessions: new SessionService(store, accessTokens, passwords, throttle, {
      refreshIdleMs: config.auth.refreshIdleMs, refreshAbsoluteMs: config.auth.refreshAbsoluteMs,
    }),
    apiKeys: new ApiKeyService(store),
    members: new MemberService(store),
    agents: new AgentService(store, models, agentDirectory, live, { toolsAllowPrivate: config.tools.allowPrivate }),
    public: new PublicService(store, agentDirectory, chat, { ...config.publicLimits, processes: () => registry.size }),
    knowledgeBases: new KnowledgeBaseService(store, knowledge, search),
    conversations: new ConversationService(store),
    health: new HealthService(store, () => draining || chat.isDraining, config.metricsToken, () => started),
    webhooks: new WebhookService(store, dispatcher, outbox, config.webhooks.allowPrivate),
    usage: new UsageService(store),
    organization: new OrganizationService(store, config.retentionDays),
    retention: new RetentionSweep({
      store, erase: (orgId, id) => chat.control.erase(orgId, id), defaultDays: config.retentionDays, logger,
    }),
    metricsText: async () => {
      if (!config.cluster.groupChild) return metrics.text();
      // The whole group: every neighbour's metrics too, each series labelled by its process.
      const others = await Promise.all(registry.neighbours.map(async (p) => {
        try {
          const answer = await peers.request(p.url, 'GET', '/internal/v1/metrics');
          return answer.status === 200 ? answer.body as never : undefined;
        } catch {
          return undefined;
        }
      }));
      return metrics.groupText(others.filter((o) => o !== undefined));
    },
    metricsJson: () => metrics.json(),
  };
  const routes = apiRoutes(services);
  const sockets = socketRoutes(services, {
    chat, public: services.public, conversations: services.conversations, logger, frames: new ChannelFrames(), authTimeoutMs: config.ws.authTimeoutMs,
  });
  // Before recovery: events that recovery writes (document.failed) find their endpoints.
  await dispatcher.start();
  await feed.start();
  await recover(store, knowledge, outbox, logger);
  const internal = internalRoutes(services, () => self.id);
  const sse = new SseHub({ heartbeatMs: config.heartbeatMs, maxBufferedBytes: config.sseMaxBufferedBytes, logger });
  const dashboard = loadDashboard(config.dashboardDir);
  if (!dashboard.available) logger.warn({ dir: config.dashboardDir }, 'the dashboard is not built (npm run build): /dashboard answers 404');
  const widget = loadWidget(config.widgetDir);
  if (!widget.available) logger.warn({ dir: config.widgetDir }, 'the widget is not built (npm run build): /widget.js answers 404');
  const server = await startUwsServer({
    host: config.host, port: config.port, router: new Router([...routes, ...internal]), internalPort: config.cluster.internalPort,
    tls: config.tls,
    clientAddress: config.proxies.trusted.empty ? undefined : clientAddressOf(new ClientAddresses(config.proxies.trusted, config.proxies.header)),
    dispatch: createDispatcher(access, (publicKey) => services.public.allowedOrigins(publicKey),
      (req) => verifyInternal(clusterSecret, req.headers[INTERNAL_HEADER], req.method, req.path, req.body) !== undefined),
    sse, logger, metrics, bodyLimitBytes: config.bodyLimitBytes, rawBodyLimitBytes: config.documentLimitBytes, sites: [dashboard, widget, loadWidgetPreview()],
    sockets: { routes: sockets, maxBufferedBytes: config.ws.maxBufferedBytes, idleTimeoutS: config.ws.idleTimeoutS },
    allowedOrigins: (publicKey) => services.public.allowedOrigins(publicKey),
  });
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const scheme = server.tls ? 'https' : 'http';
  // The internal port is plain HTTP even with TLS on (with TLS it serves only the neighbours: docs/operations.md "TLS").
  if (self.url === '') self.url = server.internalPort !== undefined ? `http://${shownHost}:${server.internalPort}` : `${scheme}://${shownHost}:${server.port}`;
  // Recovery by the living: registered, neighbours that are gone found (their work taken over), then the
  // leases this process holds renewed and abandoned ones swept.
  await registry.start(peers, config.cluster.replaces);
  await chat.placement.start();
  services.retention.start();
  if (!opts.deferReady) started = true;

  let closing: Promise<void> | undefined;
  return {
    url: `${scheme}://${shownHost}:${server.port}`,
    port: server.port,
    services,
    store,
    knowledge,
    directory: new DirectoryService(store, passwords),
    tokens: accessTokens,
    events: bus,
    get sockets() { return server.sockets; },
    webhooks: dispatcher,
    self,
    logger,
    ready() { started = true; },
    async reloadTls() {
      if (!server.tls) return false;
      await server.reloadTls();
      return true;
    },
    close() {
      draining = true;
      closing ??= (async () => {
        // The record says "draining" before the port closes: neighbours that find it closed then wait for
        // this process's heartbeat instead of taking its conversations over (src/cluster/process-registry.ts).
        // The internal port, when there is one, stays open for them until the end.
        await registry.draining();
        server.stopListening('public');
        await services.retention.stop();
        await chat.drain(config.shutdownGraceMs);
        await feed.stop();
        stopAccessChanges();
        await registry.stop();
        server.stopListening('all');
        await peers.close();
        server.closeAll();
        sse.close();
        knowledge.stopWaiting();
        await knowledge.settled();
        await dispatcher.close();
        await sender.close();
        await pool.close();
        await toolDispatcher.close().catch(() => { /* already closed */ });
        await models.close();
        await embeddings?.close();
        await tokens.close();
        await store.close();
        metrics.close();
        logger.info('stopped');
      })();
      return closing;
    },
  };
}

/** The transport's client-address hook over a resolver (a bound method, built once). */
function clientAddressOf(resolver: ClientAddresses): (peer: string, headers: Readonly<Record<string, string>>) => string {
  return (peer, headers) => resolver.resolve(peer, headers);
}

/** Parley's version (package.json), for the webhook User-Agent `Parley/<version>`. */
export const PARLEY_VERSION: string = readVersion();

function readVersion(): string {
  // src/parley.ts (tests, tsx) and dist/src/parley.js (npm start) sit at different depths.
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'parley' && typeof pkg.version === 'string') return pkg.version;
    } catch { /* try the next */ }
  }
  return '0.0.0';
}

/**
 * Start-up recovery, before the server listens (nothing a client was told about is lost, and nothing is
 * left hanging): the turns of conversations stored before leases existed (no lease: no process can be
 * running them) that have a visitor message and no agent reply get a failed reply with code
 * `interrupted`, stored with its `message.created` webhook event like any other reply (docs/webhooks.md),
 * and every document left `processing` is ingested again from its stored upload. The cut turns of
 * conversations with a lease are the business of the process that takes the lease over (Placement).
 */
async function recover(store: Store, knowledge: KnowledgeService, outbox: Outbox, logger: Logger): Promise<void> {
  const at = new Date().toISOString();
  const events: StoredEvent[] = [];
  const interrupted = await store.conversations.failInterruptedTurns(INTERRUPTED, at, ({ message, agent_id }) => {
    const stored = outbox.events(message.org_id, [messageCreated(message, agent_id)], at);
    if (stored !== undefined) events.push(...stored);
    return stored;
  }, 'unleased');
  outbox.committed(events);
  if (interrupted.length > 0) {
    logger.warn({ turns: interrupted.length, conversations: new Set(interrupted.map((t) => t.conversation_id)).size }, 'turns cut short by an earlier stop stored as failed (interrupted)');
  }
  await knowledge.resumePending();
}

/**
 * Warns when the data directory, or a file in it, can be reached by others than the account running
 * Parley (a directory made by hand, or by a Parley before 0700/0600): it holds the token signing key, the
 * webhook secrets and every conversation. The warning names the paths and the command that fixes them.
 */
function warnIfDataExposed(dataDir: string, logger: Logger): void {
  const exposed = exposedPaths(dataDir);
  if (exposed.length === 0) return;
  const fix = fixModesCommand(dataDir);
  logger.warn({
    data_dir: dataDir, fix,
    exposed: exposed.map((e) => ({ path: e.path, mode: `0${e.mode.toString(8)}` })),
  }, `the data directory can be read by other accounts on this machine (it holds the signing key, webhook secrets and conversations); fix it with: ${fix}`);
}

