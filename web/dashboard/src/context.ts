import { createContext, useContext } from 'react';
import type { Api } from './api';
import type { Period } from './types';

/** What every page needs: the signed-in API client and the period chosen in the header. */
export interface Dashboard {
  api: Api;
  period: Period;
}

export const DashboardContext = createContext<Dashboard | null>(null);

export function useDashboard(): Dashboard {
  const dashboard = useContext(DashboardContext);
  if (dashboard === null) throw new Error('useDashboard outside the signed-in dashboard');
  return dashboard;
}
