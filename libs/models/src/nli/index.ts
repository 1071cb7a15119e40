export * from './local-nli-model';
