/** A small uPlot line chart that redraws when its series change and resizes with its box. */
import { useEffect, useRef } from "react";
import uPlot from "uplot";

/** One time series: x is seconds since the epoch. */
export interface Series {
  label: string;
  x: number[];
  y: number[];
}

/** Draws `series` with an accessible name; the numbers themselves are also on the page as text. */
export function LineChart(props: { title: string; series: Series; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const chart = new uPlot(
      {
        width: el.clientWidth || 300,
        height: props.height ?? 160,
        series: [{}, { label: props.series.label, stroke: "#1d4ed8", width: 2 }],
        legend: { show: false },
        axes: [{}, { size: 50 }],
      },
      [[], []],
      el,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: el.clientWidth || 300, height: props.height ?? 160 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [props.series.label, props.height]);
  useEffect(() => {
    plot.current?.setData([props.series.x, props.series.y]);
  }, [props.series]);
  return <div ref={box} role="img" aria-label={props.title} className="w-full min-w-0 overflow-hidden" />;
}
