import nodemailer from 'nodemailer';
import type { Logger } from '../../shared/logger.js';
import type { Mailer } from '../ports.js';

export function createMailer(smtp: { url: string; from: string }, log: Logger): Mailer {
  const transport = nodemailer.createTransport(smtp.url);
  return {
    async send(mail) {
      try {
        await transport.sendMail({ from: smtp.from, ...mail });
        return true;
      } catch (err) {
        log.warn({ err: (err as Error).message, to: mail.to }, 'e-mail not sent');
        return false;
      }
    },
    close: () => transport.close(),
  };
}
