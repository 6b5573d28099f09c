const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function bytes(value: number): string {
  let scaled = value;
  let unit = 0;
  while (scaled >= 1024 && unit < UNITS.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${unit === 0 ? scaled : scaled.toFixed(scaled < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

export function orDash(value: number | string | null): string {
  return value === null ? "–" : String(value);
}

/** Milliseconds since the epoch as the time of day, to the millisecond. */
export function clock(time: number | null): string {
  return time === null ? "" : new Date(time).toISOString().slice(11, 23);
}
