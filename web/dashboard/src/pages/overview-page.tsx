import { useMemo } from 'react';
import { Chart, type ChartOption } from '../components/chart';
import { LoadedView } from '../components/loaded-view';
import { SortableTable } from '../components/sortable-table';
import { StatCard } from '../components/stat-card';
import { useDashboard } from '../context';
import { count, dateTime, milliseconds, percent, relative } from '../format';
import { useLoad } from '../load';
import { Link } from '../router';
import type { AgentStat, Delegations, LatencyHeatmap, Overview, Period, PolicyStat, Timeseries, TrustDistribution } from '../types';

const ALLOWED_COLOR = '#2e7d32';
const DENIED_COLOR = '#c62828';
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** The organization's traffic over the chosen period: GET /admin/analytics/* (one section each, each failing on its own). */
export function OverviewPage() {
  const { api, period } = useDashboard();
  const query = { period };
  const overview = useLoad((signal) => api.get<Overview>('/admin/analytics/overview', query, signal), [api, period]);
  const timeseries = useLoad((signal) => api.get<Timeseries>('/admin/analytics/timeseries', { period, bucket: period === '30d' ? 'day' : 'hour' }, signal), [api, period]);
  const heatmap = useLoad((signal) => api.get<LatencyHeatmap>('/admin/analytics/latency-heatmap', query, signal), [api, period]);
  const trust = useLoad((signal) => api.get<TrustDistribution>('/admin/analytics/trust-distribution', query, signal), [api, period]);
  const agents = useLoad((signal) => api.get<{ agents: AgentStat[] }>('/admin/analytics/agents', { period, limit: 100 }, signal), [api, period]);
  const policies = useLoad((signal) => api.get<{ policies: PolicyStat[] }>('/admin/analytics/policies', query, signal), [api, period]);
  const delegations = useLoad((signal) => api.get<Delegations>('/admin/analytics/delegations', query, signal), [api, period]);

  return (
    <>
      <h1>Overview · last {period}</h1>
      <section aria-labelledby="numbers-title">
        <h2 id="numbers-title" className="visually-hidden">
          Numbers of the period
        </h2>
        <LoadedView loaded={overview} what="the overview">
          {(data) => <StatCards overview={data} period={period} />}
        </LoadedView>
      </section>
      <div className="grid-2">
        <section className="card" aria-labelledby="traffic-title">
          <h2 id="traffic-title">Allowed and denied</h2>
          <LoadedView loaded={timeseries} what="the time series">
            {(data) => <TrafficChart series={data} />}
          </LoadedView>
        </section>
        <section className="card" aria-labelledby="heatmap-title">
          <h2 id="heatmap-title">Latency by weekday and hour (UTC)</h2>
          <LoadedView loaded={heatmap} what="the latency heatmap">
            {(data) => <LatencyHeatmapChart heatmap={data} />}
          </LoadedView>
        </section>
        <section className="card" aria-labelledby="trust-title">
          <h2 id="trust-title">Trust distribution</h2>
          <LoadedView loaded={trust} what="the trust distribution">
            {(data) => <TrustChart distribution={data} />}
          </LoadedView>
        </section>
        <section className="card" aria-labelledby="delegations-title">
          <h2 id="delegations-title">Delegations</h2>
          <LoadedView loaded={delegations} what="the delegations">
            {(data) => <DelegationsView delegations={data} />}
          </LoadedView>
        </section>
      </div>
      <section className="card" aria-labelledby="top-agents-title">
        <h2 id="top-agents-title">Top agents</h2>
        <LoadedView loaded={agents} what="the agents">
          {(data) => <TopAgents agents={data.agents} />}
        </LoadedView>
      </section>
      <section className="card" aria-labelledby="top-policies-title">
        <h2 id="top-policies-title">Policies</h2>
        <LoadedView loaded={policies} what="the policies">
          {(data) => <TopPolicies policies={data.policies} />}
        </LoadedView>
      </section>
    </>
  );
}

function signed(value: number, unit: string): string {
  const magnitude = Math.abs(Math.round(value * 100) / 100);
  return `${value > 0 ? '+' : value < 0 ? '−' : ''}${magnitude}${unit}`;
}

function StatCards({ overview, period }: { overview: Overview; period: Period }) {
  const { trends } = overview;
  return (
    <div className="cards">
      <StatCard label="Requests" value={count(overview.totalRequests)} change={trends.totalRequests} changeText={signed(trends.totalRequests, '%')} better="neither" period={period} />
      <StatCard
        label="Enforcement rate"
        value={percent(overview.enforcementRate)}
        change={trends.enforcementRate}
        changeText={signed(trends.enforcementRate, ' pts')}
        better="neither"
        period={period}
      />
      <StatCard label="Active agents" value={count(overview.activeAgents)} change={trends.activeAgents} changeText={signed(trends.activeAgents, '')} better="neither" period={period} />
      <StatCard label="Avg latency" value={milliseconds(overview.avgLatencyMs)} change={trends.avgLatencyMs} changeText={signed(trends.avgLatencyMs, ' ms')} better="down" period={period} />
    </div>
  );
}

function bucketLabel(time: string, bucket: Timeseries['bucket']): string {
  const date = new Date(time);
  if (bucket === 'day') return date.toLocaleDateString('en-GB', { day: '2-digit', month: 'short' });
  return date.toLocaleString('en-GB', { weekday: 'short', hour: '2-digit', minute: '2-digit' });
}

function TrafficChart({ series }: { series: Timeseries }) {
  const option = useMemo<ChartOption>(
    () => ({
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 48, right: 16, top: 36, bottom: 32 },
      xAxis: { type: 'category', data: series.data.map((point) => bucketLabel(point.time, series.bucket)) },
      yAxis: { type: 'value', minInterval: 1 },
      series: [
        { name: 'Allowed', type: 'bar', stack: 'decisions', color: ALLOWED_COLOR, data: series.data.map((point) => point.allowed) },
        { name: 'Denied', type: 'bar', stack: 'decisions', color: DENIED_COLOR, data: series.data.map((point) => point.denied) },
      ],
    }),
    [series],
  );
  const allowed = series.data.reduce((sum, point) => sum + point.allowed, 0);
  const denied = series.data.reduce((sum, point) => sum + point.denied, 0);
  return <Chart option={option} testId="traffic-chart" summary={`${allowed} allowed and ${denied} denied requests, in ${series.data.length} ${series.bucket} buckets`} />;
}

function LatencyHeatmapChart({ heatmap }: { heatmap: LatencyHeatmap }) {
  const option = useMemo<ChartOption>(() => {
    const highest = Math.max(1, ...heatmap.cells.map((cell) => cell.avgLatencyMs));
    return {
      tooltip: {
        formatter: (item: { value: [number, number, number, number] }) =>
          `${DAYS[item.value[1]]} ${String(item.value[0]).padStart(2, '0')}:00 UTC<br/>${milliseconds(item.value[2])} on average, ${count(item.value[3])} decisions`,
      },
      grid: { left: 40, right: 72, top: 8, bottom: 28 },
      xAxis: { type: 'category', data: Array.from({ length: 24 }, (_, hour) => String(hour).padStart(2, '0')), splitArea: { show: true } },
      yAxis: { type: 'category', data: DAYS, splitArea: { show: true } },
      visualMap: {
        min: 0,
        max: highest,
        calculable: true,
        orient: 'vertical',
        right: 0,
        top: 'middle',
        itemHeight: 140,
        formatter: (value: number) => milliseconds(value),
        inRange: { color: ['#e8f5e9', '#fff59d', '#ef6c00', '#b71c1c'] },
      },
      series: [{ type: 'heatmap', data: heatmap.cells.map((cell) => [cell.hourOfDay, cell.dayOfWeek, cell.avgLatencyMs, cell.count]) }],
    };
  }, [heatmap]);
  if (heatmap.cells.length === 0) return <p className="muted">No decisions in this period.</p>;
  const slowest = heatmap.cells.reduce((worst, cell) => (cell.avgLatencyMs > worst.avgLatencyMs ? cell : worst));
  return (
    <Chart
      option={option}
      testId="latency-heatmap"
      summary={`${heatmap.cells.length} weekday-hours with decisions; the slowest is ${DAYS[slowest.dayOfWeek]} ${slowest.hourOfDay}:00 UTC at ${milliseconds(slowest.avgLatencyMs)}`}
    />
  );
}

function TrustChart({ distribution }: { distribution: TrustDistribution }) {
  const option = useMemo<ChartOption>(() => {
    const { tiers } = distribution;
    const describe = (index: number) => {
      const tier = tiers[index];
      return `${count(tier.requestCount)} requests (${percent(tier.pct)}) · ${count(tier.agentCount)} agent${tier.agentCount === 1 ? '' : 's'}`;
    };
    return {
      tooltip: { trigger: 'item', formatter: (item: { dataIndex: number; name: string }) => `${item.name}<br/>${describe(item.dataIndex)}` },
      grid: { left: 48, right: 16, top: 28, bottom: 32 },
      xAxis: { type: 'category', data: tiers.map((tier) => tier.tier) },
      yAxis: { type: 'value', name: 'requests', minInterval: 1 },
      series: [
        {
          name: 'Requests',
          type: 'bar',
          color: '#1565c0',
          barMaxWidth: 64,
          data: tiers.map((tier) => tier.requestCount),
          label: { show: true, position: 'top', formatter: (item: { dataIndex: number }) => `${count(tiers[item.dataIndex].agentCount)} agent${tiers[item.dataIndex].agentCount === 1 ? '' : 's'}` },
        },
      ],
    };
  }, [distribution]);
  const summary = distribution.tiers.map((tier) => `${tier.tier}: ${tier.agentCount} agents, ${tier.requestCount} requests (${percent(tier.pct)})`).join('; ');
  return <Chart option={option} testId="trust-distribution" summary={summary} />;
}

function DelegationsView({ delegations }: { delegations: Delegations }) {
  return (
    <>
      <dl className="facts">
        <div>
          <dt>Delegated requests</dt>
          <dd>{count(delegations.totalChains)}</dd>
        </div>
        <div>
          <dt>Denied</dt>
          <dd>{count(delegations.blockedChains)}</dd>
        </div>
        <div>
          <dt>Average depth</dt>
          <dd>{delegations.avgDepth}</dd>
        </div>
      </dl>
      <SortableTable
        caption="Delegation pairs"
        testId="delegation-pairs"
        rows={delegations.topPairs}
        rowKey={(pair) => `${pair.fromAgent}→${pair.toAgent}`}
        initialSort={{ key: 'count', descending: true }}
        empty="No delegated requests in this period."
        columns={[
          { key: 'from', label: 'Delegating agent', sortBy: (pair) => pair.fromAgent, render: (pair) => pair.fromAgent },
          { key: 'to', label: 'Acting agent', sortBy: (pair) => pair.toAgent, render: (pair) => pair.toAgent },
          { key: 'count', label: 'Requests', numeric: true, sortBy: (pair) => pair.count, render: (pair) => count(pair.count) },
        ]}
      />
    </>
  );
}

function TopAgents({ agents }: { agents: AgentStat[] }) {
  return (
    <SortableTable
      caption="Agents of the period"
      testId="top-agents"
      rows={agents}
      rowKey={(agent) => agent.id}
      initialSort={{ key: 'requests', descending: true }}
      empty="No agent made a request in this period."
      columns={[
        { key: 'name', label: 'Agent', sortBy: (agent) => agent.name ?? agent.id, render: (agent) => <Link to={`/agents/${encodeURIComponent(agent.id)}`}>{agent.name ?? agent.id}</Link> },
        { key: 'tier', label: 'Tier', sortBy: (agent) => agent.trustTier, render: (agent) => agent.trustTier ?? '—' },
        { key: 'requests', label: 'Requests', numeric: true, sortBy: (agent) => agent.requests, render: (agent) => count(agent.requests) },
        { key: 'allowed', label: 'Allowed', numeric: true, sortBy: (agent) => agent.allowed, render: (agent) => count(agent.allowed) },
        { key: 'denied', label: 'Denied', numeric: true, sortBy: (agent) => agent.denied, render: (agent) => count(agent.denied) },
        { key: 'latency', label: 'Avg latency', numeric: true, sortBy: (agent) => agent.avgLatencyMs, render: (agent) => milliseconds(agent.avgLatencyMs) },
        { key: 'lastActive', label: 'Last active', sortBy: (agent) => agent.lastActive, render: (agent) => <time title={dateTime(agent.lastActive)}>{relative(agent.lastActive)}</time> },
      ]}
    />
  );
}

function TopPolicies({ policies }: { policies: PolicyStat[] }) {
  return (
    <SortableTable
      caption="Policies that decided requests in the period"
      testId="top-policies"
      rows={policies}
      rowKey={(policy) => policy.name}
      initialSort={{ key: 'triggered', descending: true }}
      empty="No policy decided a request in this period."
      columns={[
        { key: 'name', label: 'Policy', sortBy: (policy) => policy.name, render: (policy) => <Link to={`/policies/${encodeURIComponent(policy.name)}`}>{policy.name}</Link> },
        { key: 'triggered', label: 'Decisions', numeric: true, sortBy: (policy) => policy.triggered, render: (policy) => count(policy.triggered) },
        { key: 'allowRate', label: 'Allowed', numeric: true, sortBy: (policy) => policy.allowRate, render: (policy) => percent(policy.allowRate) },
        { key: 'denyRate', label: 'Denied', numeric: true, sortBy: (policy) => policy.denyRate, render: (policy) => percent(policy.denyRate) },
        { key: 'topAction', label: 'Most frequent action', sortBy: (policy) => policy.topAction, render: (policy) => <code>{policy.topAction}</code> },
      ]}
    />
  );
}
