import nodemailer from 'nodemailer';
import type { Logger } from '../../shared/logger.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends e-mail in the background: `send` never throws and never blocks the caller. */
export interface Mailer {
  send(mail: Mail): Promise<boolean>;
  close(): void;
}

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
