import { AdmissionRefusal } from "../admission-refusal.js";
import type { SlotWait } from "../http-pool.js";
import { HttpReservation } from "../http-reservation.js";

/** The reservation an HTTP admission gave at once; throws if it refused or made the request wait. */
export function admitted(result: HttpReservation | AdmissionRefusal | SlotWait): HttpReservation {
  if (!(result instanceof HttpReservation)) throw new Error("expected a reservation at once");
  return result;
}

/** The wait an HTTP admission put the request in; throws if it admitted or refused it at once. */
export function waiting(result: HttpReservation | AdmissionRefusal | SlotWait): SlotWait {
  if (result instanceof HttpReservation || result instanceof AdmissionRefusal)
    throw new Error("expected a wait");
  return result;
}
