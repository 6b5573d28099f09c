export * from "./error-codes.js";
export * from "./keyload-error.js";
