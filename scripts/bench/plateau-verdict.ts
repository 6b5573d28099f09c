/**
 * Whether a series has reached a plateau: its growth across the second half of the run (the slope
 * over that half times the half's length) stays within a tolerance. The slope is Theil–Sen's, the
 * median of the slopes between every pair of points, so that one sample caught in a snapshot's copy or
 * before a collection does not decide it, while a steady climb does.
 */

export interface SeriesPoint {
  /** Seconds since the run started. */
  readonly t: number;
  readonly value: number;
}

export interface PlateauTolerance {
  /** The growth allowed as a share of the series' mean over the second half. */
  readonly relative: number;
  /** ... or this much, whichever is larger (the series' own unit). */
  readonly absolute: number;
}

export interface PlateauJudgement {
  readonly name: string;
  /** Over the second half: the fitted growth, the mean and the growth allowed. */
  readonly growth: number;
  readonly mean: number;
  readonly allowed: number;
  readonly plateau: boolean;
}

/** The median of the pairwise slopes (value per second); 0 with fewer than two points. */
export function theilSenSlope(points: readonly SeriesPoint[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const dt = points[j]!.t - points[i]!.t;
      if (dt > 0) slopes.push((points[j]!.value - points[i]!.value) / dt);
    }
  }
  if (slopes.length === 0) return 0;
  slopes.sort((a, b) => a - b);
  const mid = slopes.length >> 1;
  return slopes.length % 2 === 1 ? slopes[mid]! : (slopes[mid - 1]! + slopes[mid]!) / 2;
}

/** Judges `points` (a whole run's, in time order) on the part from `halfT` seconds on. */
export function judgePlateau(
  name: string,
  points: readonly SeriesPoint[],
  halfT: number,
  tolerance: PlateauTolerance,
): PlateauJudgement {
  const half = points.filter((p) => p.t >= halfT);
  const span = half.length > 1 ? half.at(-1)!.t - half[0]!.t : 0;
  const growth = theilSenSlope(half) * span;
  const mean = half.length > 0 ? half.reduce((sum, p) => sum + p.value, 0) / half.length : 0;
  const allowed = Math.max(tolerance.relative * mean, tolerance.absolute);
  return { name, growth, mean, allowed, plateau: growth <= allowed };
}
