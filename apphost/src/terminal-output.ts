import { useColour } from "./log-line-format.js";

/**
 * The AppHost's console: lines on stdout (endpoints, voter logs) and one status line on stderr that a
 * terminal shows in place, redrawn below whatever is printed meanwhile. Without a terminal the status
 * is printed as a plain line, and only when it changes, so a CI log stays short.
 */
export class TerminalOutput {
  readonly colour: boolean;
  private statusText = "";
  private readonly live: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream = process.stdout,
    private readonly err: NodeJS.WriteStream = process.stderr,
  ) {
    this.colour = useColour(out);
    this.live = err.isTTY === true;
  }

  line(text: string): void {
    this.hideStatus();
    this.out.write(`${text}\n`);
    this.showStatus();
  }

  /** Replaces the screen with `text` on a terminal (`status --watch`); elsewhere prints it after a blank line. */
  screen(text: string): void {
    if (this.out.isTTY) this.out.write(`\x1b[H\x1b[2J${text}\n`);
    else this.line(`\n${text}`);
  }

  error(text: string): void {
    this.hideStatus();
    this.err.write(`${text}\n`);
    this.showStatus();
  }

  status(text: string): void {
    if (text === this.statusText) return;
    if (!this.live) {
      this.statusText = text;
      this.err.write(`${text}\n`);
      return;
    }
    this.hideStatus();
    this.statusText = text;
    this.showStatus();
  }

  clearStatus(): void {
    this.hideStatus();
    this.statusText = "";
  }

  private hideStatus(): void {
    if (this.live && this.statusText) this.err.write("\r\x1b[2K");
  }

  private showStatus(): void {
    if (this.live && this.statusText) this.err.write(this.statusText.slice(0, (this.err.columns ?? 120) - 1));
  }
}
