/** A one-line progress bar on a terminal; nothing at all when the stream is not one. */

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface Progress {
  update(done: number): void;
  /** Erases the bar, so the final message starts on a clean line. */
  finish(): void;
}

const silent: Progress = { update() {}, finish() {} };

export function progressBar(stream: ProgressStream, total: number, label: string): Progress {
  if (!stream.isTTY || total <= 0) return silent;
  const render = (done: number) => {
    const counts = `${done}/${total} ${label}`;
    // Fit the terminal: a wrapped line would defeat the carriage return.
    const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - counts.length - 4));
    const filled = Math.round((Math.min(done, total) / total) * width);
    stream.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${counts}\u001b[K`);
  };
  render(0);
  return {
    update: render,
    finish: () => stream.write('\r\u001b[K'),
  };
}
