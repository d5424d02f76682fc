import { AppError } from '../errors/app-error.js';
import type { Logger } from '../log/logger.js';
import { createBuiltinModel } from './builtin/builtin-model.js';
import { createOpenAIProvider } from './openai/openai-model.js';
import type { ModelProvider } from './port.js';
import type { TokenCounter } from './token-counter.js';

/** The model providers configured on this server (API.md "Agents": never configured through the API). */
export interface ModelRegistry {
  /** The provider named `name`; throws AppError `unknown_provider` (400) when it is not configured. */
  get(name: string): ModelProvider;
  has(name: string): boolean;
  names(): string[];
  close(): Promise<void>;
}

/**
 * Builds the registry: `builtin` always; `openai` when `openai.baseUrl` is configured
 * (PARLEY_OPENAI_BASE_URL), calling any OpenAI-compatible endpoint.
 */
export function createModelRegistry(opts: {
  openai: { baseUrl: string; apiKey: string | undefined; connections: number } | undefined;
  modelTimeoutMs: number;
  builtinWordDelayMs: number;
  tokens: TokenCounter;
  logger: Logger;
}): ModelRegistry {
  const providers = new Map<string, ModelProvider & { close?: () => Promise<void> }>();
  providers.set('builtin', createBuiltinModel({ wordDelayMs: opts.builtinWordDelayMs, tokens: opts.tokens }));
  if (opts.openai) {
    providers.set('openai', createOpenAIProvider({
      baseUrl: opts.openai.baseUrl,
      ...(opts.openai.apiKey ? { apiKey: opts.openai.apiKey } : {}),
      timeoutMs: opts.modelTimeoutMs,
      connections: opts.openai.connections,
      logger: opts.logger,
    }));
  }
  return {
    get(name) {
      const p = providers.get(name);
      if (!p) throw new AppError('unknown_provider', `Model provider "${name}" is not configured on this server (configured: ${[...providers.keys()].join(', ')}).`);
      return p;
    },
    has: (name) => providers.has(name),
    names: () => [...providers.keys()],
    async close() {
      await Promise.all([...providers.values()].map((p) => p.close?.()));
    },
  };
}
