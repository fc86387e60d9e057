import { catalogRoutes } from './catalog/catalog.routes.js';
import { hugRoutes } from './hug/hug.routes.js';
import { offerRoutes } from './offer/offer.routes.js';
import type { Route } from './router.js';
import { runRoutes } from './runner/runs.routes.js';
import { tokensRoutes } from './tokens/tokens.routes.js';

/**
 * Every daemon route, served both as `POST /v1/<path>` and as a hub command. A feature keeps its
 * routes in `<feature>/<feature>.routes.ts`; adding a route to a feature touches only that file, a new
 * feature adds its file and one line here.
 */
export const daemonRoutes: readonly Route[] = [
  ...offerRoutes,
  ...hugRoutes,
  ...tokensRoutes,
  ...catalogRoutes,
  ...runRoutes,
];
