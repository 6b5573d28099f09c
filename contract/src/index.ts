export * from "./error-codes.js";
export * from "./keyload-error.js";
export * from "./schemas/index.js";
