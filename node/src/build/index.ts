export { TranspileError } from "./transpile-error.js";
export { type TranspileOptions, transpilePackage } from "./transpile-package.js";
