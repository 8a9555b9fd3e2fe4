/** Former name of kafkajs-patches.ts, kept so existing imports keep working. Import kafkajs-patches.js. */
import './kafkajs-patches.js';
