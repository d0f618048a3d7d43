import { useEffect, useRef } from 'react';
import { BarChart, HeatmapChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent, TooltipComponent, VisualMapComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

// Only the parts the dashboard draws, so the bundle carries no more of ECharts than it uses.
echarts.use([LineChart, BarChart, HeatmapChart, GridComponent, TooltipComponent, LegendComponent, VisualMapComponent, CanvasRenderer]);

export type ChartOption = echarts.EChartsCoreOption;

/**
 * An ECharts chart that follows its container's size. `summary` is what a screen reader hears
 * instead of the picture: the numbers the chart shows, in words.
 */
export function Chart({ option, summary, height = 280, testId }: { option: ChartOption; summary: string; height?: number; testId?: string }) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);

  useEffect(() => {
    const element = container.current;
    if (element === null) return;
    const instance = echarts.init(element, undefined, { renderer: 'canvas' });
    chart.current = instance;
    const resize = new ResizeObserver(() => instance.resize());
    resize.observe(element);
    return () => {
      resize.disconnect();
      instance.dispose();
      chart.current = null;
    };
  }, []);

  useEffect(() => {
    chart.current?.setOption({ animation: false, textStyle: { fontFamily: 'inherit' }, ...option }, true);
  }, [option]);

  return <div ref={container} className="chart" style={{ height }} role="img" aria-label={summary} data-testid={testId} />;
}
