/** The strategy table, by config name. */
import type { Strategy } from '../../config/schema.js';
import { balanced } from './balanced.js';
import { cheap } from './cheap.js';
import { fast } from './fast.js';
import { sticky } from './sticky.js';
import type { StrategyFn } from './types.js';

export const STRATEGIES: Readonly<Record<Strategy, StrategyFn>> = { fast, balanced, cheap, sticky };

export const STRATEGY_NAMES = Object.keys(STRATEGIES) as Strategy[];
