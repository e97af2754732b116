/** A broken rule found by a pure validator: where (relative to the object it checked) and why, ready to become a 422 item. */
export type Problem = { path: (string | number)[]; message: string }
