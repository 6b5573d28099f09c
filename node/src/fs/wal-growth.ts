/**
 * Whether a SQLite WAL file has outgrown a size, asked after every commit. Once a checkpoint has let
 * SQLite restart the WAL, it writes frames from the file's start again, so the file grows only when the
 * frames written since pass its size (at most the `journal_size_limit` it is cut back to at a
 * restart). A file that grows past the target holds more than the target, whatever an estimate of the
 * frames written, or a restart that did not happen, made its owner believe.
 */
export class WalGrowth {
  private bytes = 0;

  constructor(
    /** The WAL file's size now, in bytes; 0 while there is none. */
    private readonly sizeNow: () => number,
    private readonly targetBytes: number,
  ) {}

  /**
   * Whether the file grew since the last call and is now larger than the target. Called after every
   * commit, so that growth is always that of the commits since the last call.
   */
  outgrown(): boolean {
    const bytes = this.sizeNow();
    const grew = bytes > this.bytes;
    this.bytes = bytes;
    return grew && bytes > this.targetBytes;
  }
}
