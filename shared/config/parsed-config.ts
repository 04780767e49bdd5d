import type { LedgerConfig, RedisSentinelConfig, SwapPool } from "./types";

/** The config as the schema read it: where the schema failed, fields may hold anything (each rule checks first). */
export interface ParsedChain {
  providers: string[];
  subgraph: string[];
  analyticsSubgraph: string[];
  transactionManagerAddress?: string;
  priceOracleAddress?: string;
  multicallAddress?: string;
  confirmations?: number;
  minGas?: string;
  gasStations: string[];
  allowRelay: boolean;
  allowUnpricedRelay: boolean;
  relayerFeeThreshold?: number;
  subgraphSyncBuffer?: number;
  defaultInitialGasPrice?: string;
  routerContractRelayerAsset?: string;
  gasPriceMaximum?: string;
  gasBumpPercent?: number;
  maxGasBumps?: number;
  confirmationTimeoutMs?: number;
  nativeMainnetEquivalent?: string;
  metricsSlot?: number;
}

export interface ParsedConfig {
  adminToken: string;
  routerContractAddress?: string;
  remoteSignerUrl?: string;
  mnemonic?: string;
  chainConfig: Record<string, ParsedChain>;
  swapPools: SwapPool[];
  logLevel: string;
  port: number;
  host: string;
  network: string;
  requestLimit: number;
  cleanUpMode: boolean;
  diagnosticMode: boolean;
  redisUrl?: string;
  redis?: ParsedRedis;
  redisPrefix: string;
  messagingUrl?: string | string[];
  authUrl?: string;
  metricsPort: number;
  metricsHost: string;
  dashboardActions: boolean;
  ledger?: Partial<LedgerConfig> & { databaseUrl: string };
}

export type ParsedRedis = Partial<RedisSentinelConfig> & {
  url?: string;
  cluster?: unknown;
  minReplicas?: number;
  replicaAckTimeoutMs?: number;
};
