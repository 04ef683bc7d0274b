// Configuration categories over HTTP (`GET`/`PUT /api/config/{category}`).
import type { ConfigCategories } from '../../settings/categories.js';
import { CATEGORY_BODY } from '../../settings/schemas.js';
import type { Route } from '../../http/router.js';
import { validateBody } from '../../http/schemas.js';
import { PROBLEM, ref } from '../openapi/components.js';
import { DomainError } from '../../errors.js';
import type { CategoryName } from '../../settings/definitions.js';

/** Whether a PUT would accept `value` for the category's key `name`: what a stored value is checked with. */
export function acceptsStored(category: CategoryName, name: string, value: unknown): boolean {
  try {
    // A copy: validation folds names and drops nulls in place.
    validateBody(CATEGORY_BODY[category]!, { [name]: structuredClone(value) });
    return value !== null;
  } catch (e) {
    if (e instanceof DomainError && e.code === 'invalid_argument') return false;
    throw e;
  }
}

export function configRoutes(categories: ConfigCategories): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/config/{category}',
      operationId: 'getConfigCategory',
      summary: 'Effective settings of a category (voice, device, mqtt)',
      tag: 'Configuration',
      auth: { bearer: 'any' },
      responses: {
        200: { description: 'Effective values', schema: ref('ConfigCategory') },
        404: { description: 'Unknown category', ...PROBLEM.any },
      },
      handler: ({ params }) => ({ status: 200, body: categories.get(params.category!) }),
    },
    {
      method: 'PUT',
      path: '/api/config/{category}',
      operationId: 'putConfigCategory',
      summary: 'Set some settings of a category (the others keep their values); applied at once, kept across restarts',
      tag: 'Configuration',
      auth: { bearer: 'admin' },
      body: 'ConfigCategoryUpdate',
      responses: {
        200: { description: 'Effective values after the write', schema: ref('ConfigCategory') },
        400: PROBLEM.validation,
        404: { description: 'Unknown category', ...PROBLEM.any },
        503: PROBLEM.storage,
      },
      handler: async ({ params, body }) => {
        const category = params.category!;
        categories.get(category); // 404 before validating against a schema that does not exist
        validateBody(CATEGORY_BODY[category]!, body);
        return { status: 200, body: await categories.put(category, body as Record<string, unknown>) };
      },
    },
  ];
}
