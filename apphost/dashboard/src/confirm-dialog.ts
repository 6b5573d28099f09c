import { byId } from "./dom.js";

/**
 * Asks before an action is carried out: the page's modal dialog, answered by its Cancel or confirm
 * button (or Escape, which cancels).
 */
export function confirmAction(question: string, confirmLabel: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>("confirm");
  byId("confirm-text").textContent = question;
  byId("confirm-button").textContent = confirmLabel;
  dialog.returnValue = "cancel";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
  });
}
