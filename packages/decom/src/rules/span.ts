/** Ages as the audit's findings say them. */

/** Seconds from `t` (a Date or RFC 3339) to `now` (ms); 0 without a time. */
export const ageSec = (t: Date | string | undefined, now: number): number => (t ? (now - new Date(t).getTime()) / 1000 : 0);

/** Seconds as people read a span: 45s, 12m3s, 3h0m, 2d4h. */
export const span = (sec: number): string =>
  sec >= 86400 ? `${Math.floor(sec / 86400)}d${Math.floor((sec % 86400) / 3600)}h` : sec >= 3600 ? `${Math.floor(sec / 3600)}h${Math.floor((sec % 3600) / 60)}m` : sec >= 60 ? `${Math.floor(sec / 60)}m${Math.floor(sec % 60)}s` : `${Math.floor(sec)}s`;
