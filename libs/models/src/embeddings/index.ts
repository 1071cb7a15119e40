export * from './types';
export * from './openai-embedding-model';
export * from './local-embedding-model';
export * from './config';
