export { NoFreePortError, pickFreePort, pickFreePorts } from "./free-ports.js";
