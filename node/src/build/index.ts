export { TranspileError } from "./transpile-error.js";
export { transpilePackage } from "./transpile-package.js";
