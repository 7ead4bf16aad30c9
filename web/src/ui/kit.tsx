/** Small building blocks every page shares: headings, buttons, badges, fields, errors and empty states. */
import { useId, type ReactNode } from "react";
import { errorMessage } from "./errors";

/** A page: its heading, an optional action area, and its content. */
export function Page(props: { title: string; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="space-y-4">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <h1 className="text-2xl font-semibold">{props.title}</h1>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}

/** A white panel with an optional heading. */
export function Card(props: { title?: string; children: ReactNode }) {
  return (
    <div className="min-w-0 rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      {props.title !== undefined && <h2 className="mb-2 text-lg font-semibold">{props.title}</h2>}
      {props.children}
    </div>
  );
}

const TONES = {
  primary: "bg-blue-700 text-white hover:bg-blue-800",
  plain: "bg-white text-slate-900 border border-slate-300 hover:bg-slate-100",
  danger: "bg-white text-red-800 border border-red-300 hover:bg-red-50",
} as const;

/** A button; `confirm` asks before running a destructive action. */
export function Button(props: {
  children: ReactNode;
  onClick?: () => void;
  type?: "button" | "submit";
  tone?: keyof typeof TONES;
  disabled?: boolean;
  confirm?: string;
}) {
  return (
    <button
      type={props.type ?? "button"}
      disabled={props.disabled}
      className={`rounded px-3 py-1.5 text-sm font-medium focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-700 disabled:opacity-50 ${TONES[props.tone ?? "plain"]}`}
      onClick={() => {
        if (props.confirm !== undefined && !window.confirm(props.confirm)) return;
        props.onClick?.();
      }}
    >
      {props.children}
    </button>
  );
}

const BADGES: Record<string, string> = {
  healthy: "bg-green-100 text-green-900",
  active: "bg-green-100 text-green-900",
  enabled: "bg-green-100 text-green-900",
  unstable: "bg-amber-100 text-amber-900",
  degraded: "bg-amber-100 text-amber-900",
  needs_update: "bg-amber-100 text-amber-900",
  pending_verification: "bg-amber-100 text-amber-900",
  needs_reauth: "bg-amber-100 text-amber-900",
  error: "bg-red-100 text-red-900",
  orphaned: "bg-red-100 text-red-900",
  quarantined: "bg-red-100 text-red-900",
  inactive: "bg-slate-200 text-slate-800",
  disabled: "bg-slate-200 text-slate-800",
};

/** A state word in a colour that says how good it is. */
export function Badge(props: { state: string }) {
  return <span className={`inline-block rounded px-2 py-0.5 text-xs font-semibold ${BADGES[props.state] ?? "bg-slate-200 text-slate-800"}`}>{props.state}</span>;
}

/** The message of a failed call, announced to screen readers. */
export function ErrorBox(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  return (
    <p role="alert" className="rounded border-l-4 border-red-700 bg-red-50 p-2 text-sm text-red-900">
      {errorMessage(props.error)}
    </p>
  );
}

/** What a list shows when it has nothing, saying what to do next. */
export function Empty(props: { children: ReactNode }) {
  return <p className="rounded border border-dashed border-slate-300 p-4 text-sm text-slate-700">{props.children}</p>;
}

/** A labelled text input. */
export function TextField(props: { label: string; value: string; onChange: (v: string) => void; placeholder?: string; type?: string; required?: boolean; hint?: string }) {
  const id = useId();
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-sm font-medium">
        {props.label}
      </label>
      <input
        id={id}
        type={props.type ?? "text"}
        value={props.value}
        required={props.required}
        placeholder={props.placeholder}
        onChange={(e) => props.onChange(e.target.value)}
        className="rounded border border-slate-400 px-2 py-1 text-sm"
      />
      {props.hint !== undefined && <span className="text-xs text-slate-700">{props.hint}</span>}
    </div>
  );
}

/** A labelled multi-line input. */
export function TextArea(props: { label: string; value: string; onChange: (v: string) => void; hint?: string; rows?: number }) {
  const id = useId();
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-sm font-medium">
        {props.label}
      </label>
      <textarea id={id} rows={props.rows ?? 3} value={props.value} onChange={(e) => props.onChange(e.target.value)} className="rounded border border-slate-400 px-2 py-1 font-mono text-sm" />
      {props.hint !== undefined && <span className="text-xs text-slate-700">{props.hint}</span>}
    </div>
  );
}

/** A labelled select over fixed options. */
export function Select(props: { label: string; value: string; onChange: (v: string) => void; options: readonly (readonly [string, string])[] }) {
  const id = useId();
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-sm font-medium">
        {props.label}
      </label>
      <select id={id} value={props.value} onChange={(e) => props.onChange(e.target.value)} className="rounded border border-slate-400 bg-white px-2 py-1 text-sm">
        {props.options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A labelled on/off switch (a checkbox, so the keyboard and screen readers know it). */
export function Switch(props: { label: string; checked: boolean; onChange: (v: boolean) => void; disabled?: boolean }) {
  const id = useId();
  return (
    <span className="inline-flex items-center gap-2">
      <input id={id} type="checkbox" role="switch" checked={props.checked} disabled={props.disabled} onChange={(e) => props.onChange(e.target.checked)} className="h-4 w-4 accent-blue-700" />
      <label htmlFor={id} className="text-sm">
        {props.label}
      </label>
    </span>
  );
}

/** A usage bar: how much of a limit is used. */
export function UsageBar(props: { label: string; used: number; max: number; unit?: string }) {
  const pct = props.max > 0 ? Math.min(100, (props.used / props.max) * 100) : 0;
  const text = `${props.label}: ${fmt(props.used)} of ${fmt(props.max)}${props.unit ?? ""}`;
  return (
    <div className="text-xs">
      <div>{text}</div>
      <div role="meter" aria-label={text} aria-valuemin={0} aria-valuemax={props.max} aria-valuenow={props.used} className="h-2 w-full rounded bg-slate-200">
        <div className={`h-2 rounded ${pct > 90 ? "bg-red-700" : "bg-blue-700"}`} style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}

/** A number for people: at most four significant digits. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return "-";
  return Number(n.toPrecision(4)).toLocaleString("en-US");
}

/** An amount in USD: fmt's precision, but a small non-zero spend keeps three significant digits instead of showing 0. */
export function usd(n: number): string {
  return n === 0 || Math.abs(n) >= 0.01 ? fmt(n) : n.toPrecision(3);
}

/** A table with a caption for screen readers; scrolls sideways on narrow screens. */
export function Table(props: { caption: string; head: readonly string[]; children: ReactNode }) {
  return (
    // Focusable so keyboard users can scroll a table wider than a phone screen.
    <div role="region" aria-label={props.caption} tabIndex={0} className="overflow-x-auto rounded-lg border border-slate-200 bg-white focus-visible:outline-2 focus-visible:outline-blue-700">
      <table className="w-full text-left text-sm">
        <caption className="sr-only">{props.caption}</caption>
        <thead className="bg-slate-100">
          <tr>
            {props.head.map((h) => (
              <th key={h} scope="col" className="px-3 py-2 font-semibold">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200">{props.children}</tbody>
      </table>
    </div>
  );
}

/** A table cell. */
export function Td(props: { children?: ReactNode }) {
  return <td className="px-3 py-2 align-top">{props.children}</td>;
}
