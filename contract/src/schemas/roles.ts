/** The roles a principal may hold (contract section 3). */
export const ROLES = ["admin", "writer", "reader"] as const;
export type Role = (typeof ROLES)[number];
