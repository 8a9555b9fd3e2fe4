export { buildWordcountTopology, wordsOf, type WordcountTopologyOptions } from './wordcount-topology.js';
export { runWordcount, type WordcountConfig } from './run-wordcount.js';
export { makeLine, produceLines, type ProduceLinesOptions } from './line-generator.js';
