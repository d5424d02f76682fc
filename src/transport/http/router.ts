import type { RouteDef } from './types.js';

interface CompiledRoute {
  route: RouteDef;
  pattern: RegExp;
  names: string[];
}

/** Result of matching a request: the route and its path params, or why nothing matched. */
export type RouteMatch =
  | { ok: true; route: RouteDef; params: Record<string, string> }
  | { ok: false; reason: 'not_found' | 'method_not_allowed'; allow?: string[] };

/**
 * Matches method + path against route templates (`/v1/agents/{agent_id}`). Literal segments win over
 * parameters because routes are tried in registration order, which lists literals first where they
 * overlap. Path params are percent-decoded; a param never spans a `/`. `HEAD` matches the `GET` route
 * of a path (API.md "Conventions": HEAD works wherever GET does; RFC 9110 section 9.3.2) and is listed
 * in `allow` wherever GET is.
 */
export class Router {
  private readonly routes: CompiledRoute[];

  constructor(routes: RouteDef[]) {
    this.routes = routes.map((route) => {
      const names: string[] = [];
      const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      return { route, pattern: new RegExp(`^${source}/?$`), names };
    });
  }

  /**
   * The routes of the first path template that matches `path`, whatever their method, with its path
   * parameters (CORS preflights), or undefined.
   */
  pathRoutes(path: string): { routes: RouteDef[]; params: Record<string, string> } | undefined {
    let found: { routes: RouteDef[]; params: Record<string, string>; source: string } | undefined;
    for (const c of this.routes) {
      const m = c.pattern.exec(path);
      if (!m) continue;
      if (found === undefined) {
        const params: Record<string, string> = {};
        for (let i = 0; i < c.names.length; i++) {
          try { params[c.names[i]!] = decodeURIComponent(m[i + 1]!); } catch { return undefined; }
        }
        found = { routes: [c.route], params, source: c.pattern.source };
      } else if (c.pattern.source === found.source) {
        found.routes.push(c.route);
      }
    }
    return found === undefined ? undefined : { routes: found.routes, params: found.params };
  }

  match(method: string, path: string): RouteMatch {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const allow: string[] = [];
    for (const c of this.routes) {
      const m = c.pattern.exec(path);
      if (!m) continue;
      if (c.route.method !== wanted) {
        // Several templates may match one path (`/v1/webhooks/events` and `/v1/webhooks/{endpoint_id}`):
        // each method is named once.
        if (!allow.includes(c.route.method)) allow.push(c.route.method);
        if (c.route.method === 'GET' && !allow.includes('HEAD')) allow.push('HEAD');
        continue;
      }
      const params: Record<string, string> = {};
      for (let i = 0; i < c.names.length; i++) {
        try { params[c.names[i]!] = decodeURIComponent(m[i + 1]!); } catch { return { ok: false, reason: 'not_found' }; }
      }
      return { ok: true, route: c.route, params };
    }
    return allow.length ? { ok: false, reason: 'method_not_allowed', allow } : { ok: false, reason: 'not_found' };
  }
}
