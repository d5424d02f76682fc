/** Types of scripts/api-types.mjs, for the test that imports it (test/unit/api-types.test.ts). */
export declare const API_TYPES_FILE: string;
/** The text of src/web/api-types.ts for an OpenAPI 3.1 document. */
export declare function renderApiTypes(document: Record<string, unknown>): Promise<string>;
