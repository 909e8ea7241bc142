// Package testfactory makes what tests need, the way the product makes it:
// dead letters ingested as the ingester stores them (DeadLetters), replay
// requests drafted and submitted through the replay service (Draft,
// Request), and a running console (app.New on a fresh database, an
// in-process NATS server and Dex, package testidp) with people signed
// in through the real sign-in flow (StartConsole, Console.SignIn).
//
// Waiting is in the leaf package testfactory/wait, which the dlq package's
// own tests can import (they cannot import this one, which imports dlq).
package testfactory
