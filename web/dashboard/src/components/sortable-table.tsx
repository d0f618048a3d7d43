import { useMemo, useState, type ReactNode } from 'react';

export interface Column<T> {
  key: string;
  label: string;
  /** What the column sorts by; without it the column does not sort. */
  sortBy?: (row: T) => string | number | null;
  render: (row: T) => ReactNode;
  numeric?: boolean;
}

interface SortableTableProps<T> {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  initialSort?: { key: string; descending: boolean };
  empty: string;
  testId?: string;
}

/**
 * A table whose headers sort it (a button each, so the keyboard sorts too; `aria-sort` tells a
 * screen reader the order). It scrolls sideways on a narrow screen rather than squeezing.
 */
export function SortableTable<T>({ caption, columns, rows, rowKey, initialSort, empty, testId }: SortableTableProps<T>) {
  const [sort, setSort] = useState(initialSort ?? null);
  const sorted = useMemo(() => {
    const column = columns.find((candidate) => candidate.key === sort?.key);
    if (!sort || !column?.sortBy) return rows;
    const value = column.sortBy;
    const direction = sort.descending ? -1 : 1;
    return [...rows].sort((a, b) => direction * compare(value(a), value(b)));
  }, [rows, columns, sort]);
  const toggle = (key: string) => setSort((current) => ({ key, descending: current?.key === key ? !current.descending : true }));
  if (rows.length === 0) return <p className="muted">{empty}</p>;
  return (
    <div className="table-scroll">
      <table data-testid={testId}>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => {
              const active = sort?.key === column.key;
              const order = active ? (sort.descending ? 'descending' : 'ascending') : 'none';
              return (
                <th key={column.key} scope="col" aria-sort={column.sortBy ? order : undefined} className={column.numeric ? 'numeric' : undefined}>
                  {column.sortBy ? (
                    <button type="button" className="sort" onClick={() => toggle(column.key)}>
                      {column.label}
                      <span aria-hidden="true" className="sort-mark">
                        {active ? (sort.descending ? ' ▼' : ' ▲') : ' ↕'}
                      </span>
                    </button>
                  ) : (
                    column.label
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {sorted.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((column) => (
                <td key={column.key} className={column.numeric ? 'numeric' : undefined} data-column={column.key}>
                  {column.render(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function compare(a: string | number | null, b: string | number | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}
