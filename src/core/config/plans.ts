/** Subscription plans and their limits (`GET /billing/plans`, docs/billing.md); -1 means unlimited. */

export const PLAN_IDS = ['free', 'starter', 'professional', 'enterprise'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

export interface PlanLimits {
  agents: number;
  policyChecksPerMonth: number;
  policies: number;
  auditRetentionDays: number;
  teamMembers: number;
}

export interface PlanPricing {
  monthly: number;
  annual: number;
  currency: string;
}

export interface Plan {
  id: PlanId;
  name: string;
  description: string;
  limits: PlanLimits;
  pricing: PlanPricing | null;
  features: string[];
}

export const UNLIMITED = -1;

export const PLANS: Readonly<Record<PlanId, Plan>> = {
  free: {
    id: 'free',
    name: 'Free',
    description: 'For trying the gateway with a couple of agents.',
    limits: { agents: 2, policyChecksPerMonth: 1000, policies: 3, auditRetentionDays: 7, teamMembers: 1 },
    pricing: { monthly: 0, annual: 0, currency: 'usd' },
    features: ['2 agents', '1,000 policy checks per month', '3 policies', '7-day audit retention'],
  },
  starter: {
    id: 'starter',
    name: 'Starter',
    description: 'For a team putting its first agents into production.',
    limits: { agents: 10, policyChecksPerMonth: 25000, policies: 25, auditRetentionDays: 30, teamMembers: 5 },
    pricing: { monthly: 2900, annual: 27800, currency: 'usd' },
    features: ['10 agents', '25,000 policy checks per month', '25 policies', '30-day audit retention', 'Email alerts'],
  },
  professional: {
    id: 'professional',
    name: 'Professional',
    description: 'For organizations governing many agents.',
    limits: { agents: 50, policyChecksPerMonth: 250000, policies: UNLIMITED, auditRetentionDays: 90, teamMembers: 25 },
    pricing: { monthly: 9900, annual: 95000, currency: 'usd' },
    features: ['50 agents', '250,000 policy checks per month', 'Unlimited policies', '90-day audit retention', 'Edge sidecar', 'All alert providers'],
  },
  enterprise: {
    id: 'enterprise',
    name: 'Enterprise',
    description: 'Unlimited usage, custom terms.',
    limits: { agents: UNLIMITED, policyChecksPerMonth: UNLIMITED, policies: UNLIMITED, auditRetentionDays: UNLIMITED, teamMembers: UNLIMITED },
    pricing: null,
    features: ['Unlimited agents', 'Unlimited policy checks', 'Unlimited policies', 'Unlimited audit retention', 'Dedicated support'],
  },
};

