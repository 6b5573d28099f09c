export { makeTestCertificates, type TestCertificates } from "./test-certificates.js";
