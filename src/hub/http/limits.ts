/** The largest request body the hub reads (CONTRACT.md §4: a larger one answers bad_request). */
export const BODY_LIMIT = 10 * 1024 * 1024;
